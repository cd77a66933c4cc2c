//! `parkbench new probe NAME --debian PACKAGE,…`: a runtime the kit has no template for, from
//! Debian's packages. Writes the root filesystem pin `toolchains/debian-NAME.yaml` (its sha256 the
//! placeholder `parkbench pin update` replaces) and `docker/NAME/`, a probe image on it whose
//! wrapper `probe` holds the command line the author writes.

use anyhow::{Context, Result, bail};

use super::{Ending, Paths, check_probe_name, check_repo, probe_entry, refuse_existing, write};
use crate::images::pin::{self, Pin};
use crate::images::recipe::Recipe;
use crate::study::Kind;

/// The templates: path in the new image folder (or `None` for the pin), text, executable.
const FILES: [(Option<&str>, &str, bool); 4] = [
    (None, include_str!("templates/debian/pin.yaml"), false),
    (
        Some("image.yaml"),
        include_str!("templates/debian/image.yaml"),
        false,
    ),
    (
        Some("Dockerfile"),
        include_str!("templates/debian/Dockerfile"),
        false,
    ),
    (Some("probe"), include_str!("templates/debian/probe"), true),
];

/// The root filesystem pin of the probe image `name`.
pub fn pin_name(name: &str) -> String {
    format!("debian-{name}")
}

/// `parkbench new probe NAME --debian PACKAGE,… [--kind K]`.
pub fn probe(paths: &Paths, name: &str, packages: &[String], kind: Kind) -> Result<Ending> {
    check_probe_name(name)?;
    check_repo(&paths.repo)?;
    let packages = check_packages(packages)?;
    let pin = pin_name(name);
    let dir = paths.repo.join("docker").join(name);
    let pin_file = paths.repo.join("toolchains").join(format!("{pin}.yaml"));
    refuse_existing(&dir)?;
    refuse_existing(&pin_file)?;
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{pin}}", &pin)
            .replace("{{kind}}", kind.name())
            .replace("{{packages_list}}", &packages.join(","))
            .replace("{{package}}", &packages[0])
            .replace("{{packages_list_yaml}}", &packages.join(", "))
            .replace("{{packages_words}}", &words(&packages))
    };
    // What `new` writes must load: a pin or recipe that does not is the kit's bug, caught here.
    let pin_text = fill(FILES[0].1);
    Pin::parse(&pin_text)
        .context("the pin parkbench new wrote does not load (please report this)")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (path, text, executable) in &FILES[1..] {
        let path = path.expect("image files have paths");
        write(&dir.join(path), &fill(text), *executable)?;
    }
    write(&pin_file, &pin_text, false)?;
    Recipe::load(&dir)
        .context("the image.yaml parkbench new wrote does not load (please report this)")?;
    println!(
        "wrote {} (a Debian bookworm root filesystem with {}; its sha256 a placeholder)",
        pin_file.display(),
        words(&packages)
    );
    println!(
        "wrote {}/ (a {} probe on it: write the program's command line in {})",
        dir.display(),
        kind.name(),
        dir.join("probe").display()
    );
    println!("its entry in a study's probes (`parkbench new study ID --probe {name}` writes it):");
    print!("{}", probe_entry(name, kind));
    println!(
        "{}",
        paths.runnable(&format!(
            "next: parkbench pin update {pin}   (locks the packages and records the root \
             filesystem's sha256; `plan` refuses the pin until then)"
        ))
    );
    Ok(Ending::Ok)
}

/// The packages, each a Debian package name, at least one, none twice.
fn check_packages(packages: &[String]) -> Result<Vec<String>> {
    let packages: Vec<String> = (packages.iter())
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if packages.is_empty() {
        bail!("--debian names no package: name the runtime's Debian packages (`--debian elixir`)");
    }
    for (i, p) in packages.iter().enumerate() {
        if !pin::is_package_name(p) {
            bail!(
                "--debian: {p:?} is not a Debian package name (a lowercase letter or digit, then \
                 lowercase letters, digits and `+.-`)"
            );
        }
        if packages[..i].contains(p) {
            bail!("--debian names {p} twice");
        }
    }
    Ok(packages)
}

/// `a`, `a and b`, `a, b and c`.
fn words(packages: &[String]) -> String {
    match packages {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(repo: &std::path::Path) -> Paths {
        Paths {
            repo: repo.to_owned(),
            results: repo.join("results"),
        }
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for d in ["docker", "toolchains", "results"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        dir
    }

    #[test]
    fn writes_a_placeholder_pin_and_an_image_on_it() {
        let repo = repo();
        let packages = ["elixir".to_string(), "erlang-base".into()];
        probe(&paths(repo.path()), "ex", &packages, Kind::Peak).unwrap();
        let pin = Pin::load(&repo.path().join("toolchains/debian-ex.yaml")).unwrap();
        assert!(pin.has_placeholder() && pin.is_rootfs() && pin.lock.is_none());
        let pin::Source::Mmdebstrap(m) = &pin.sources[0] else {
            panic!("a root filesystem pin: {pin:?}")
        };
        assert_eq!(m.packages, packages);
        let recipe = Recipe::load(&repo.path().join("docker/ex")).unwrap();
        assert_eq!(recipe.parents["BASE"], "debian-ex");
        assert!(recipe.probe);
        let wrapper = std::fs::read_to_string(repo.path().join("docker/ex/probe")).unwrap();
        assert!(wrapper.contains("no command line yet"), "{wrapper}");
        // Never overwrites: the image, or the pin alone.
        let again = probe(&paths(repo.path()), "ex", &packages, Kind::Peak).unwrap_err();
        assert!(format!("{again:#}").contains("already exists"), "{again:#}");
        std::fs::remove_dir_all(repo.path().join("docker/ex")).unwrap();
        let again = probe(&paths(repo.path()), "ex", &packages, Kind::Peak).unwrap_err();
        assert!(format!("{again:#}").contains("debian-ex.yaml already exists"));
    }

    #[test]
    fn the_scaffolds_examples_name_the_first_package_asked_for() {
        let repo = repo();
        probe(&paths(repo.path()), "rb", &["ruby".to_string()], Kind::Peak).unwrap();
        for file in ["image.yaml", "probe"] {
            let text = std::fs::read_to_string(repo.path().join("docker/rb").join(file)).unwrap();
            assert!(text.contains("/usr/bin/ruby"), "{file}: {text}");
            assert!(!text.contains("/usr/bin/elixir"), "{file}: {text}");
        }
    }

    #[test]
    fn bad_packages_are_refused_by_name() {
        let repo = repo();
        for (packages, said) in [
            (vec![], "names no package"),
            (
                vec!["Elixir".to_string()],
                "\"Elixir\" is not a Debian package name",
            ),
            (vec!["ab".to_string(), "ab".into()], "names ab twice"),
            (vec!["--hook=x".to_string()], "is not a Debian package name"),
        ] {
            let err = probe(&paths(repo.path()), "ex", &packages, Kind::Peak).unwrap_err();
            assert!(format!("{err:#}").contains(said), "{err:#}");
        }
        assert!(!repo.path().join("docker/ex").exists());
    }

    #[test]
    fn words_join_like_a_sentence() {
        let w = |p: &[&str]| words(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(w(&["a"]), "a");
        assert_eq!(w(&["a", "b"]), "a and b");
        assert_eq!(w(&["a", "b", "c"]), "a, b and c");
    }
}
