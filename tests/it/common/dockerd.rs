//! More Docker Engines on this machine, for the fleet tests: each a `dockerd` of the same package as
//! the machine's own, with its own data root, exec root, pidfile and managed containerd, listening
//! on a loopback TCP port with mutual TLS (a CA and certificates made here with `openssl`), no
//! bridge, no iptables or masquerade changes. Stopped and its folders removed when dropped — on a
//! panic too — and any left by a test process that died are stopped by the next one.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the extra Engines keep their folders: `<pid of the test process>-<n>` each.
const BASE: &str = "/var/tmp/parkbench-test-engines";

/// One extra Engine, running until dropped.
pub struct ExtraEngine {
    /// `tcp://127.0.0.1:PORT`.
    pub url: String,
    /// The folder holding `ca.pem`, `cert.pem` and `key.pem` for a client (the
    /// `DOCKER_CERT_PATH` layout).
    pub certs: PathBuf,
    /// The CA folder's other files: a client certificate signed by another CA, for TLS failures.
    pub wrong_certs: PathBuf,
    dir: PathBuf,
    child: Option<Child>,
}

impl ExtraEngine {
    /// Starts one and waits until it answers on its port (up to a minute). `storage_driver` is
    /// the machine Engine's (`fuse-overlayfs` where overlay2 cannot mount).
    pub fn start(storage_driver: &str) -> ExtraEngine {
        reap_stale();
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = PathBuf::from(BASE).join(format!("{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Owned before anything else is made in it: another test's reaping never takes it for stale.
        std::fs::write(dir.join("owner"), std::process::id().to_string()).unwrap();
        let certs = dir.join("client");
        let wrong_certs = dir.join("wrong");
        make_certs(&dir, &certs, &wrong_certs);
        std::fs::write(dir.join("daemon.json"), "{}").unwrap();
        let port = free_port();
        let url = format!("tcp://127.0.0.1:{port}");
        let log = std::fs::File::create(dir.join("dockerd.log")).unwrap();
        let mut cmd = Command::new("dockerd");
        cmd.arg("--config-file")
            .arg(dir.join("daemon.json"))
            .arg("--data-root")
            .arg(dir.join("data"))
            .arg("--exec-root")
            .arg(dir.join("exec"))
            .arg("--pidfile")
            .arg(dir.join("dockerd.pid"))
            .args(["-H", &url, "--tlsverify"])
            .arg("--tlscacert")
            .arg(dir.join("server/ca.pem"))
            .arg("--tlscert")
            .arg(dir.join("server/cert.pem"))
            .arg("--tlskey")
            .arg(dir.join("server/key.pem"))
            .args(["--bridge", "none", "--iptables=false", "--ip6tables=false"])
            .args(["--ip-masq=false", "--storage-driver", storage_driver])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // Its own process group, so that the whole tree (dockerd, its containerd, shims) is
        // signalled together.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        let child = cmd.spawn().expect("starting dockerd");
        let mut engine = ExtraEngine {
            url,
            certs,
            wrong_certs,
            dir,
            child: Some(child),
        };
        engine.wait_ready();
        engine
    }

    /// The port's number.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// The Engine's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default()
    }

    /// Kills the Engine at once (SIGKILL to its process group), as a host that stops answering;
    /// its folders stay until the value is dropped.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal_group(child.id(), libc::SIGKILL);
            let _ = child.wait();
        }
        unmount_under(&self.dir);
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.log().contains("API listen on") {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "dockerd exited ({status}) before it answered:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("dockerd did not answer within a minute:\n{}", self.log());
    }
}

impl Drop for ExtraEngine {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
        unmount_under(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
        // The folder of all of them goes with the last one (remove_dir leaves one not empty).
        let _ = std::fs::remove_dir(BASE);
    }
}

/// SIGTERM to the group, then SIGKILL after 20 s.
pub fn stop(child: &mut Child) {
    signal_group(child.id(), libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            // Its containerd and shims may outlive it by a moment.
            signal_group(child.id(), libc::SIGKILL);
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    signal_group(child.id(), libc::SIGKILL);
    let _ = child.wait();
}

fn signal_group(pid: u32, signal: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is shared.
    unsafe {
        libc::kill(-(pid as i32), signal);
    }
}

/// Unmounts whatever a killed Engine left mounted under `dir` (overlay layers, its exec root).
pub fn unmount_under(dir: &Path) {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return;
    };
    let mut points: Vec<&str> = mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|p| Path::new(p).starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = Command::new("umount").args(["-l", p]).status();
    }
}

/// Stops Engines left by test processes that are gone (a killed `cargo test`).
fn reap_stale() {
    for dir in stale_folders(Path::new(BASE)) {
        if let Some(pid) = live_pid(&dir.join("dockerd.pid")) {
            // SAFETY: as in signal_group.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        unmount_under(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The folders under `base` whose `owner` file names a test process that is gone.
pub fn stale_folders(base: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let entries = entries.flatten().map(|e| e.path());
    entries
        .filter(|dir| live_pid(&dir.join("owner")).is_none())
        .collect()
}

/// The process a pid file names, while it runs.
pub fn live_pid(file: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A CA, the server's certificate for 127.0.0.1 and a client's (`client/`), and a client
/// certificate of another CA (`wrong/`), all with `openssl`.
fn make_certs(dir: &Path, client: &Path, wrong: &Path) {
    let server = dir.join("server");
    let ca = dir.join("ca");
    for d in [&server, client, wrong, &ca] {
        std::fs::create_dir_all(d).unwrap();
    }
    let other_ca = dir.join("other-ca");
    std::fs::create_dir_all(&other_ca).unwrap();
    make_ca(&ca);
    make_ca(&other_ca);
    sign(
        &ca,
        &server,
        "127.0.0.1",
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    );
    sign(&ca, client, "client", "extendedKeyUsage=clientAuth\n");
    sign(
        &other_ca,
        wrong,
        "stranger",
        "extendedKeyUsage=clientAuth\n",
    );
    for d in [&server, client] {
        std::fs::copy(ca.join("ca.pem"), d.join("ca.pem")).unwrap();
    }
    // The stranger trusts the right CA but presents a certificate the Engine does not.
    std::fs::copy(ca.join("ca.pem"), wrong.join("ca.pem")).unwrap();
}

fn make_ca(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca-key.pem",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=parkbench-test-ca",
        ],
    );
}

fn sign(ca: &Path, out: &Path, cn: &str, ext: &str) {
    std::fs::write(out.join("ext.cnf"), ext).unwrap();
    openssl(
        out,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "req.csr",
            "-subj",
            &format!("/CN={cn}"),
        ],
    );
    let ca_pem = ca.join("ca.pem");
    let ca_key = ca.join("ca-key.pem");
    openssl(
        out,
        &[
            "x509",
            "-req",
            "-in",
            "req.csr",
            "-CA",
            ca_pem.to_str().unwrap(),
            "-CAkey",
            ca_key.to_str().unwrap(),
            "-CAcreateserial",
            "-out",
            "cert.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running openssl (Debian package openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
