//! A container that is removed when the future owning it is dropped: parallel builds under
//! `try_join_all` that lose to a failing sibling, a command cancelled by Ctrl-C. Removal normally
//! happens through [`ContainerGuard::remove`]; a guard dropped without it spawns the removal on the
//! runtime, and [`settle`] waits for those removals before the program exits. A failed removal is
//! reported with the container's ID, never swallowed.

use std::sync::Mutex;

use tokio::task::JoinHandle;

use super::Containers;

/// Removals spawned by dropped guards that have not been waited for.
static PENDING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Owns one container until it is removed.
pub struct ContainerGuard<E: Containers> {
    engine: E,
    id: Option<String>,
}

impl<E: Containers> ContainerGuard<E> {
    pub fn new(engine: E, id: String) -> Self {
        Self {
            engine,
            id: Some(id),
        }
    }

    /// The container's ID.
    pub fn id(&self) -> &str {
        self.id.as_deref().expect("the ID is taken only on removal")
    }

    /// Removes the container now; a failure is reported with its ID.
    pub async fn remove(mut self) {
        if let Some(id) = self.id.take() {
            remove(&self.engine, &id).await;
        }
    }
}

impl<E: Containers> Drop for ContainerGuard<E> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let engine = self.engine.clone();
                let task = runtime.spawn(async move { remove(&engine, &id).await });
                PENDING.lock().unwrap_or_else(|e| e.into_inner()).push(task);
            }
            Err(_) => eprintln!(
                "warning: container {id} was left behind (no runtime to remove it); remove it with the Engine's tools"
            ),
        }
    }
}

/// A container created and not yet started, with the spec it was created from: its run begins
/// with [`Containers::start_and_wait`]. Removed when [`Created::remove`]d or dropped, as a
/// [`ContainerGuard`].
pub struct Created<E: Containers> {
    pub guard: ContainerGuard<E>,
    /// What the container was created from.
    pub spec: super::ContainerSpec,
    /// How long the Engine took to create it.
    pub took: std::time::Duration,
}

impl<E: Containers> Created<E> {
    /// The container's ID.
    pub fn id(&self) -> &str {
        self.guard.id()
    }

    /// Removes the container now; a failure is reported with its ID.
    pub async fn remove(self) {
        self.guard.remove().await
    }
}

async fn remove<E: Containers>(engine: &E, id: &str) {
    if let Err(e) = engine.remove_container(id).await {
        eprintln!(
            "warning: could not remove container {id}: {e:#}; remove it with the Engine's tools"
        );
    }
}

/// Keeps a removal spawned by another dropped guard (of images) for [`settle`].
pub(super) fn defer(task: JoinHandle<()>) {
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).push(task);
}

/// Waits for every removal spawned by a dropped guard; call before the program exits.
pub async fn settle() {
    loop {
        let tasks = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
        if tasks.is_empty() {
            return;
        }
        for task in tasks {
            if let Err(e) = task.await {
                eprintln!("warning: a container removal did not finish: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::FakeEngine;
    use super::*;

    /// Waits until `done` holds (removals by other tests' guards may be settled by those tests).
    async fn eventually(done: impl Fn() -> bool) {
        settle().await;
        for _ in 0..200 {
            if done() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_dropped_guard_removes_its_container() {
        let engine = FakeEngine::new([]);
        let id = engine.add_container(&[("parkbench.run", "r")]);
        let guard = ContainerGuard::new(engine.clone(), id.clone());
        assert_eq!(guard.id(), id);
        let owner = async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        };
        // The owning future loses a race and is dropped, as under try_join_all or Ctrl-C.
        tokio::select! {
            () = owner => unreachable!(),
            () = tokio::task::yield_now() => {}
        }
        eventually(|| !engine.removed().is_empty()).await;
        assert_eq!(engine.removed(), vec![id]);
        assert!(engine.live().is_empty());
    }

    #[tokio::test]
    async fn an_explicit_removal_removes_once() {
        let engine = FakeEngine::new([]);
        let id = engine.add_container(&[]);
        ContainerGuard::new(engine.clone(), id.clone())
            .remove()
            .await;
        assert_eq!(engine.removed(), vec![id]);
        settle().await;
        assert_eq!(engine.removed().len(), 1, "removed once, not again on drop");
    }

    #[tokio::test]
    async fn a_failed_removal_is_reported_not_fatal() {
        let engine = FakeEngine::new([]);
        let id = engine.add_container(&[]);
        engine.fail_removals();
        drop(ContainerGuard::new(engine.clone(), id.clone()));
        eventually(|| engine.removal_attempts() > 0).await;
        assert_eq!(engine.removal_attempts(), 1);
        assert_eq!(
            engine.live(),
            vec![id],
            "the container is still there, and was reported"
        );
    }
}
