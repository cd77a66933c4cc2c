//! Podman's Docker-compatible API on this machine, for the Podman tests: `podman system service`,
//! rootful, with its own storage and run folders and its own socket, so that nothing of the
//! machine's Podman (if any) is touched. Its containers, images and folders are removed when it is
//! dropped (on a panic too); a service left by a test process that died is stopped by the next.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::dockerd::{live_pid, stale_folders, stop, unmount_under};

/// Where the services keep their folders: `<pid of the test process>` each.
const BASE: &str = "/var/tmp/parkbench-test-podman";

/// One Podman API service, running until dropped.
pub struct PodmanService {
    /// `unix:///…/podman.sock`, for `DOCKER_HOST` or `--hosts`.
    pub url: String,
    dir: PathBuf,
    child: Option<Child>,
}

impl PodmanService {
    /// Starts one and waits until its socket answers (up to a minute).
    ///
    /// Podman asks runc for its own default open-files and processes limits (1048576), which a
    /// container without capabilities cannot raise to when the service's hard limits are lower
    /// (`error setting rlimit`): the service is started with this process's hard limits, and its
    /// `containers.conf` asks for the same, as a Docker Engine passes on its own.
    pub fn start() -> PodmanService {
        reap_stale();
        let dir = PathBuf::from(BASE).join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("owner"), std::process::id().to_string()).unwrap();
        let limit = hard_limit(libc::RLIMIT_NOFILE).min(hard_limit(libc::RLIMIT_NPROC));
        // Every folder Podman would otherwise share with the machine's own Podman is the service's.
        let own = |name: &str| dir.join(name).display().to_string();
        let conf = format!(
            "[containers]\ndefault_ulimits = [\"nofile={limit}:{limit}\", \"nproc={limit}:{limit}\"]\n\
             [engine]\ntmp_dir = \"{}\"\nstatic_dir = \"{}\"\nvolume_path = \"{}\"\n\
             [network]\nnetwork_config_dir = \"{}\"\n",
            own("libpod-tmp"),
            own("libpod-static"),
            own("volumes"),
            own("networks"),
        );
        std::fs::write(dir.join("containers.conf"), conf).unwrap();
        let socket = dir.join("podman.sock");
        let url = format!("unix://{}", socket.display());
        let log = std::fs::File::create(dir.join("podman.log")).unwrap();
        // Podman 4.3 keeps each import's upload in its TMPDIR (`api_load.tar…`) after the import:
        // here, in the folder removed with the service.
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut cmd = podman(&dir);
        cmd.env("TMPDIR", &tmp)
            .args(["system", "service", "--time", "0", &url])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        // SAFETY: setrlimit is async-signal-safe; only lowering soft limits to hard ones here.
        unsafe {
            cmd.pre_exec(move || {
                for resource in [libc::RLIMIT_NOFILE, libc::RLIMIT_NPROC] {
                    let value = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(resource, &value) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .expect("starting `podman system service` (Debian's package podman)");
        std::fs::write(dir.join("service.pid"), child.id().to_string()).unwrap();
        let mut service = PodmanService {
            url,
            dir,
            child: Some(child),
        };
        service.wait_ready(&socket);
        service
    }

    /// The folder of its storage, run state, configuration and temporary files.
    pub fn folder(&self) -> &Path {
        &self.dir
    }

    /// The service's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("podman.log")).unwrap_or_default()
    }

    /// IDs of every container the service holds, running or not.
    pub fn containers(&self) -> Vec<String> {
        let out = podman(&self.dir)
            .args(["ps", "--all", "--quiet", "--no-trunc"])
            .output()
            .expect("running podman ps");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn wait_ready(&mut self, socket: &Path) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if std::os::unix::net::UnixStream::connect(socket).is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "podman exited ({status}) before it answered:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("podman did not answer within a minute:\n{}", self.log());
    }
}

impl Drop for PodmanService {
    fn drop(&mut self) {
        remove_all(&self.dir);
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
        unmount_under(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
        // The folder of all of them goes with the last one (remove_dir leaves one not empty).
        let _ = std::fs::remove_dir(BASE);
    }
}

/// `podman` on the service's own storage, run and configuration.
fn podman(dir: &Path) -> Command {
    let mut cmd = Command::new("podman");
    cmd.env("CONTAINERS_CONF", dir.join("containers.conf"))
        .arg("--root")
        .arg(dir.join("root"))
        .arg("--runroot")
        .arg(dir.join("run"));
    cmd
}

/// Removes every container (their conmon processes outlive the service) and image of the
/// service's own storage; nothing outside its folder (`system reset` would clear shared ones).
fn remove_all(dir: &Path) {
    for args in [
        &["rm", "--all", "--force", "--time", "0"][..],
        &["rmi", "--all", "--force"][..],
    ] {
        let _ = podman(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn hard_limit(resource: libc::__rlimit_resource_t) -> libc::rlim_t {
    let mut value = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    assert_eq!(unsafe { libc::getrlimit(resource, &mut value) }, 0);
    value.rlim_max
}

/// Removes the storage of services left by test processes that are gone (a killed `cargo test`).
fn reap_stale() {
    for dir in stale_folders(Path::new(BASE)) {
        remove_all(&dir);
        if let Some(pid) = live_pid(&dir.join("service.pid")) {
            // SAFETY: kill(2) of the service's process group; no memory is shared.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        unmount_under(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
