//! `parkbench reproduce`: the whole job, each stage one line.

use anyhow::{Result, bail};

use super::{Ending, Interrupt, Paths, archive, doctor, report, run};
use crate::args::ReproduceArgs;

pub async fn command(paths: &Paths, args: &ReproduceArgs, interrupt: &Interrupt) -> Result<Ending> {
    if doctor::command().await? != Ending::Ok {
        bail!("the machine is not ready (see the FAIL lines above)");
    }
    let run = run::study_run(paths, &args.run, interrupt).await?;
    if run.interrupted {
        return Ok(Ending::of_run(&run));
    }
    let outcome = report::command(run.dir.path())?;
    let info = archive::command(&paths.repo, run.dir.path(), args.with_images).await?;
    println!(
        "\narchive: {}\ncheck it with: parkbench check {}",
        info.path.display(),
        info.path.display()
    );
    if args.strict && outcome.claims_differ() {
        eprintln!("--strict: some claims were not reproduced");
        return Ok(Ending::ClaimsDiffer);
    }
    Ok(Ending::of_run(&run))
}
