//! Builds of images taking turns between the processes of this machine: one build of a tag at a
//! time ([`turn`]), and no build while `clean` removes build stages or the artifact cache
//! ([`builds_held_off`]). The locks are [`crate::files::lock`]s in the machine's lock folder.

use std::path::PathBuf;

use anyhow::Result;

use crate::files::lock;

/// The lock a process holds shared while it builds (from before its first build touches the artifact
/// cache to its last build's end), and `clean` alone ([`builds_held_off`]).
const GATE: &str = "images.lock";
/// The lock a process holds shared on its way to [`GATE`], and `clean` alone while it waits for the
/// builds under way: no build starts then, so that a `clean` is not kept waiting by builds that keep
/// starting.
const NEXT: &str = "images-next.lock";

/// This process's share of [`GATE`], by lock folder: taken when its first build starts, and held
/// while any [`Building`] of it lives.
static SHARES: std::sync::Mutex<Vec<(PathBuf, std::sync::Weak<lock::Held>)>> =
    std::sync::Mutex::new(Vec::new());

/// This process building images (held until dropped): no `clean` of this machine removes what its
/// builds use meanwhile.
#[derive(Debug)]
pub struct Building {
    _share: std::sync::Arc<lock::Held>,
}

/// This process's share of the builds' lock, taken if it holds none yet: a `clean` under way on
/// this machine is waited for first (said once, as `what`). Held by every build of images from
/// before it reads the artifact cache until it ends; taken again inside it, it is the same share
/// (never waited for again, so that a `clean` waiting for it cannot wait in a circle with it).
pub async fn building(what: &str) -> Result<Building> {
    let dir = lock::folder();
    let ours = |shares: &mut Vec<(PathBuf, std::sync::Weak<lock::Held>)>| {
        shares.retain(|(_, share)| share.strong_count() > 0);
        (shares.iter()).find_map(|(d, share)| (*d == dir).then(|| share.upgrade()).flatten())
    };
    if let Some(held) = ours(&mut SHARES.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(Building { _share: held });
    }
    // Only a `clean` holds either lock alone: said once, though both are waited for.
    let told = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let say = |by: &str| {
        if told
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(by.to_string())
        {
            eprintln!("{}", waiting_for_clean(what, by));
        }
    };
    let share = |name| {
        let dir = &dir;
        move || Ok(lock::try_share(dir, name)?.held())
    };
    let next = lock::wait(share(NEXT), say, std::future::pending()).await?;
    let gate = lock::wait(share(GATE), say, std::future::pending()).await?;
    drop(next);
    let gate = std::sync::Arc::new(gate.expect("never cancelled"));
    let mut shares = SHARES.lock().unwrap_or_else(|e| e.into_inner());
    // Another task of this process may have taken one meanwhile: either will do.
    if let Some(held) = ours(&mut shares) {
        return Ok(Building { _share: held });
    }
    shares.push((dir.clone(), std::sync::Arc::downgrade(&gate)));
    Ok(Building { _share: gate })
}

/// A build's turn ([`turn`]): held until dropped.
#[derive(Debug)]
pub struct Turn {
    _building: Building,
    _tag: lock::Held,
}

/// This machine's one build of `tag` while held: a process building the same tag at the same time
/// is waited for (said once, as `what`), and on the same Engine its image is then found and reused.
/// Holds this process's share of the builds' lock ([`building`]).
pub async fn turn(tag: &str, what: &str) -> Result<Turn> {
    let building = building(what).await?;
    let holder = format!("a build of {tag} (pid {})", std::process::id());
    let name = lock::file_name("image-", tag);
    Ok(Turn {
        _building: building,
        _tag: lock::take(&lock::folder(), &name, &holder, waiting(what)).await?,
    })
}

/// Every process building images on this machine done (waited for), and none starting while the
/// lock is held: what `clean` removes (build stages, the artifact cache) is then no build's. A
/// process never takes it while it holds a [`Building`]. While it waits, it says which builds it
/// waits for, and again every [`SAY_EVERY`].
pub async fn builds_held_off() -> Result<lock::Held> {
    let (dir, holder) = (
        lock::folder(),
        format!("parkbench clean (pid {})", std::process::id()),
    );
    // Builds hold it only on their way to the gate; another clean holds it while it waits.
    let _next = lock::take(&dir, NEXT, &holder, |by| {
        eprintln!("clean: waiting for {by} to end, or the builds it waits for")
    })
    .await?;
    // Each try that finds builds under way says them, once a minute: not once per holder, as
    // builds come and go while it waits.
    let started = std::time::Instant::now();
    let mut say_at = std::time::Duration::ZERO;
    let attempt = || {
        let tried = lock::try_take(&dir, GATE, &holder)?.held();
        let waited = started.elapsed();
        if tried.is_err() && waited >= say_at {
            eprintln!("{}", waiting_for_builds(waited, &under_way(&dir)));
            say_at = waited + SAY_EVERY;
        }
        Ok(tried)
    };
    let held = lock::wait(attempt, |_| {}, std::future::pending()).await?;
    Ok(held.expect("never cancelled"))
}

/// What a build (`what`) waiting for the `clean` `by` says.
fn waiting_for_clean(what: &str, by: &str) -> String {
    format!(
        "{what}: waiting for {by} to end (a clean, in whichever namespace, holds every build of \
         this machine off while it removes the build stages and cached artifacts builds share)"
    )
}

/// How often a `clean` waiting for builds says which ones it waits for.
const SAY_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// The builds under way on this machine: each image's build as its lock names it (`a build of
/// <tag> (pid N)`), and the processes that hold the builds' lock with no image's build under way
/// (between two builds, or fetching what a build reads).
fn under_way(dir: &std::path::Path) -> Vec<String> {
    // The lock folder and the kernel's list of locks, read once for both.
    let (builds, others): (Vec<_>, Vec<_>) =
        (lock::held(dir, "").into_iter()).partition(|h| h.name.starts_with("image-"));
    let mut out: Vec<String> = (builds.iter())
        .map(|b| match b.holder.as_str() {
            "" => format!("a build (pid {})", b.pid),
            holder => holder.to_string(),
        })
        .collect();
    for gate in others.into_iter().filter(|h| h.name == GATE) {
        if !builds.iter().any(|b| b.pid == gate.pid) && gate.pid != std::process::id() {
            out.push(format!("parkbench (pid {}) between builds", gate.pid));
        }
    }
    out
}

/// What a `clean` waiting `waited` so far for the builds `under_way` says.
fn waiting_for_builds(waited: std::time::Duration, under_way: &[String]) -> String {
    let what = match under_way {
        [] => String::new(),
        builds => format!(": {}", builds.join("; ")),
    };
    match waited.as_secs() / 60 {
        0 => format!(
            "clean: waiting for the image builds under way on this machine to end (every \
             namespace's: what clean removes may be theirs; Ctrl-C stops clean with no image or \
             cache removed){what}"
        ),
        minutes => format!("clean: still waiting after {minutes} min{what}"),
    }
}

/// What a process waiting for a lock another one holds says, once per holder (`what`: what waits).
fn waiting(what: &str) -> impl FnMut(&str) + Copy + '_ {
    move |by: &str| eprintln!("{what}: {by} is under way on this machine: waiting for it")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::timeout;

    const A_WHILE: Duration = Duration::from_millis(600);

    #[test]
    fn a_waiting_clean_names_the_builds_it_waits_for_and_how_long_it_has() {
        let dir = lock::folder();
        let name = lock::file_name("image-", "ns/a:1");
        let build = lock::try_take(&dir, &name, "a build of ns/a:1 (pid 7)").unwrap();
        let said = waiting_for_builds(std::time::Duration::ZERO, &under_way(&dir));
        assert!(
            said.starts_with("clean: waiting for the image builds under way on this machine")
                && said.ends_with("with no image or cache removed): a build of ns/a:1 (pid 7)"),
            "{said}"
        );
        let later = waiting_for_builds(std::time::Duration::from_secs(150), &under_way(&dir));
        assert_eq!(
            later,
            "clean: still waiting after 2 min: a build of ns/a:1 (pid 7)"
        );
        drop(build);
        assert!(under_way(&dir).is_empty());
        // A lock file emptied by a new holder about to write its name.
        let build = lock::try_take(&dir, &name, "").unwrap();
        let me = std::process::id();
        assert_eq!(under_way(&dir), [format!("a build (pid {me})")]);
        drop(build);
        let said = waiting_for_builds(std::time::Duration::ZERO, &[]);
        assert!(said.ends_with("with no image or cache removed)"), "{said}");
    }

    #[tokio::test]
    async fn a_build_waits_for_a_clean_and_says_whom_it_waits_for_and_why() {
        let dir = lock::folder();
        let clean = lock::try_take(&dir, GATE, "parkbench clean (pid 9)").unwrap();
        let build = tokio::spawn(building("the build"));
        tokio::time::sleep(A_WHILE).await;
        assert!(!build.is_finished(), "a build started beside a clean");
        drop(clean);
        build.await.unwrap().unwrap();
        let said = waiting_for_clean("the build", "parkbench clean (pid 9)");
        assert!(said.starts_with(
            "the build: waiting for parkbench clean (pid 9) to end (a clean, in \
                 whichever namespace, holds every build"
        ));
    }

    #[tokio::test]
    async fn two_builds_of_one_tag_take_turns_and_builds_of_others_do_not_wait() {
        let first = turn("ns/a:1", "a").await.unwrap();
        let other = timeout(A_WHILE, turn("ns/b:1", "b")).await;
        assert!(other.is_ok(), "another tag waited");
        let same = turn("ns/a:1", "a again");
        tokio::pin!(same);
        assert!(
            timeout(A_WHILE, &mut same).await.is_err(),
            "the same tag did not wait"
        );
        drop(first);
        same.await.unwrap();
    }

    #[tokio::test]
    async fn a_clean_waits_for_the_builds_under_way_and_holds_new_ones_off() {
        let first = turn("ns/a:1", "a").await.unwrap();
        let clean = builds_held_off();
        tokio::pin!(clean);
        assert!(
            timeout(A_WHILE, &mut clean).await.is_err(),
            "clean did not wait"
        );
        // A process that starts building while the clean waits waits for it (this one, already
        // building, goes on: the clean waits for it).
        let other = lock::try_share(&lock::folder(), NEXT).unwrap();
        assert!(
            other.held().is_err(),
            "another process could start building"
        );
        drop(first);
        let cleaning = clean.await.unwrap();
        let second = turn("ns/b:1", "b");
        tokio::pin!(second);
        assert!(
            timeout(A_WHILE, &mut second).await.is_err(),
            "a build started"
        );
        drop(cleaning);
        second.await.unwrap();
    }

    #[tokio::test]
    async fn a_build_inside_a_build_of_this_process_shares_its_lock() {
        let outer = building("outer").await.unwrap();
        let clean = builds_held_off();
        tokio::pin!(clean);
        assert!(
            timeout(A_WHILE, &mut clean).await.is_err(),
            "clean did not wait"
        );
        // The clean waiting holds other processes off, not this one's builds inside the outer one.
        let inner = timeout(A_WHILE, turn("ns/c:1", "c")).await;
        assert!(inner.is_ok(), "a build inside a build waited for the clean");
        drop((outer, inner));
        clean.await.unwrap();
    }
}
