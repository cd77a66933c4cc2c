use std::path::Path;

use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A Docker configuration folder holding context `name` at `host`, with TLS files when `tls`.
fn add_context(config: &Path, name: &str, host: &str, skip_verify: bool, tls: bool) {
    let id = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(name.as_bytes()));
    let meta = config.join("contexts/meta").join(&id);
    std::fs::create_dir_all(&meta).unwrap();
    let json = serde_json::json!({
        "Name": name,
        "Metadata": {},
        "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": skip_verify}},
    });
    std::fs::write(meta.join("meta.json"), json.to_string()).unwrap();
    if tls {
        let dir = config.join("contexts/tls").join(&id).join("docker");
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["ca.pem", "cert.pem", "key.pem"] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
    }
    std::fs::write(config.join("config.json"), "{}").unwrap();
}

struct Setup {
    dir: tempfile::TempDir,
    sources: Sources,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("docker");
    std::fs::create_dir_all(&config).unwrap();
    let sources = Sources {
        docker_config: Some(config),
        hosts_files: vec![
            dir.path().join("study/hosts.yaml"),
            dir.path().join("user/hosts.yaml"),
        ],
        cert_path: None,
        docker_host: None,
        podman_socket: Some(PathBuf::from("/run/user/1000/podman/podman.sock")),
    };
    Setup { dir, sources }
}

impl Setup {
    fn config(&self) -> &Path {
        self.sources.docker_config.as_deref().unwrap()
    }

    fn write(&self, which: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(which).join("hosts.yaml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn resolve(&self, list: &[&str], allow_plain: bool) -> Result<Vec<HostEntry>> {
        resolve_in(&names(list), &self.sources, allow_plain)
    }

    fn error(&self, list: &[&str], allow_plain: bool) -> String {
        format!("{:#}", self.resolve(list, allow_plain).unwrap_err())
    }
}

#[test]
fn local_and_urls_resolve_and_tcp_takes_docker_cert_path() {
    let mut s = setup();
    let got = s
        .resolve(&["local", "unix:///run/other.sock", "ssh://me@box"], false)
        .unwrap();
    assert_eq!(got[0].endpoint, Endpoint::Local);
    assert_eq!(got[1].endpoint, Endpoint::Unix("/run/other.sock".into()));
    assert_eq!(got[2].endpoint, Endpoint::Ssh("ssh://me@box".into()));
    assert_eq!(got[2].name, "ssh://me@box");

    s.sources.cert_path = Some("/certs".into());
    let got = s.resolve(&["tcp://10.0.0.5:2376"], false).unwrap();
    assert_eq!(
        got[0].endpoint,
        Endpoint::Tcp {
            addr: "10.0.0.5:2376".into(),
            tls: Some(TlsFiles::in_dir(Path::new("/certs")))
        }
    );
}

#[test]
fn plain_tcp_is_refused_naming_the_host_and_the_flag() {
    let s = setup();
    let e = s.error(&["tcp://10.0.0.5:2375"], false);
    assert!(
        e.contains("host `tcp://10.0.0.5:2375`") && e.contains("--allow-plain-tcp"),
        "{e}"
    );
    let got = s.resolve(&["tcp://10.0.0.5:2375"], true).unwrap();
    assert!(got[0].endpoint.is_plain_tcp());
}

#[test]
fn bad_urls_say_what_to_write() {
    let s = setup();
    for bad in ["http://box:1", "tcp://nohost", "unix://relative.sock"] {
        let e = s.error(&[bad], true);
        assert!(e.contains(bad), "{e}");
    }
}

#[test]
fn contexts_give_their_endpoint_and_tls_files() {
    let s = setup();
    add_context(s.config(), "lab", "tcp://10.1.2.3:2376", false, true);
    add_context(s.config(), "sock", "unix:///run/lab.sock", false, false);
    let got = s.resolve(&["lab", "sock"], false).unwrap();
    let id = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"lab"));
    let tls_dir = s.config().join("contexts/tls").join(id).join("docker");
    assert_eq!(
        got[0].endpoint,
        Endpoint::Tcp {
            addr: "10.1.2.3:2376".into(),
            tls: Some(TlsFiles::in_dir(&tls_dir))
        }
    );
    assert_eq!(got[1].endpoint, Endpoint::Unix("/run/lab.sock".into()));

    // A tcp context without TLS files is plain TCP; one that skips verification is refused too.
    add_context(s.config(), "bare", "tcp://10.1.2.4:2375", false, false);
    let e = s.error(&["bare"], false);
    assert!(
        e.contains("host `bare`") && e.contains("--allow-plain-tcp"),
        "{e}"
    );
    add_context(s.config(), "lax", "tcp://10.1.2.5:2376", true, true);
    let e = s.error(&["lax"], false);
    assert!(e.contains("`lax`") && e.contains("SkipTLSVerify"), "{e}");
    assert!(s.resolve(&["lax"], true).is_ok());
}

#[test]
fn an_unknown_name_lists_the_contexts_and_hosts_file_names_known() {
    let s = setup();
    add_context(s.config(), "lab", "tcp://10.1.2.3:2376", false, true);
    s.write("user", "hosts:\n  rack1:\n    url: ssh://me@rack1\n");
    let e = s.error(&["nope"], false);
    assert!(e.contains("no host `nope`"), "{e}");
    assert!(e.contains("lab") && e.contains("rack1"), "{e}");
    assert!(e.contains("docker context create nope"), "{e}");
    let e = s.error(&["rakc1"], false);
    assert!(e.contains("did you mean `rack1`?"), "{e}");
    // No folder, no hosts file: still says what to do.
    let empty = Sources::default();
    let e = format!(
        "{:#}",
        resolve_in(&names(&["x"]), &empty, false).unwrap_err()
    );
    assert!(
        e.contains("no hosts file found") && e.contains("hosts.yaml"),
        "{e}"
    );
}

#[test]
fn a_name_given_twice_or_two_names_of_one_engine_are_refused() {
    let s = setup();
    let e = s.error(&["local", "local"], false);
    assert!(e.contains("`local` is named twice"), "{e}");
    let e = s.error(&["local", "unix:///var/run/docker.sock"], false);
    assert!(e.contains("same Engine"), "{e}");
    assert!(s.error(&["local", ""], false).contains("empty name"));
    assert!(s.error(&[], false).contains("names no host"));
}

#[test]
fn hosts_files_name_urls_with_tls_and_contexts() {
    let s = setup();
    add_context(s.config(), "lab", "unix:///run/lab.sock", false, false);
    let study = s.write(
        "study",
        "hosts:\n  a:\n    url: tcp://10.0.0.1:2376\n    tls: certs/a\n  \
         b:\n    url: tcp://10.0.0.2:2376\n    tls: {ca: /p/ca.pem, cert: c.pem, key: k.pem}\n  \
         c:\n    context: lab\n",
    );
    let got = s.resolve(&["a", "b", "c"], false).unwrap();
    let base = study.parent().unwrap();
    assert_eq!(
        got[0].endpoint,
        Endpoint::Tcp {
            addr: "10.0.0.1:2376".into(),
            tls: Some(TlsFiles::in_dir(&base.join("certs/a")))
        }
    );
    assert_eq!(
        got[1].endpoint,
        Endpoint::Tcp {
            addr: "10.0.0.2:2376".into(),
            tls: Some(TlsFiles {
                ca: "/p/ca.pem".into(),
                cert: base.join("c.pem"),
                key: base.join("k.pem"),
            })
        }
    );
    assert_eq!(got[2].endpoint, Endpoint::Unix("/run/lab.sock".into()));
    // A URL given directly takes the TLS files of the hosts-file entry with that URL.
    let got = s.resolve(&["tcp://10.0.0.1:2376"], false).unwrap();
    assert!(!got[0].endpoint.is_plain_tcp());
}

#[test]
fn a_hosts_file_with_an_unknown_field_is_refused_at_its_line_and_column() {
    let s = setup();
    let path = s.write(
        "study",
        "hosts:\n  a:\n    url: tcp://10.0.0.1:2376\n    tsl: certs\n",
    );
    let e = s.error(&["a"], false);
    let at = format!("{}:4:5:", path.display());
    assert!(e.starts_with(&at), "{e}");
    assert!(
        e.contains("unknown field `tsl`") && e.contains("did you mean `tls`"),
        "{e}"
    );

    s.write(
        "study",
        "hosts:\n  a:\n    url: tcp://10.0.0.1:2376\n    tls:\n      ca: x\n      cert: y\n      \
         key: z\n      pass: w\n",
    );
    let e = s.error(&["a"], false);
    assert!(
        e.contains(":8:7:") && e.contains("unknown field `pass`"),
        "{e}"
    );
}

#[test]
fn hosts_file_entries_are_checked_at_their_line() {
    let s = setup();
    let cases = [
        (
            "hosts:\n  a:\n    tls: x\n",
            ":2:3:",
            "neither `url` nor `context`",
        ),
        (
            "hosts:\n  a:\n    url: ssh://me@a\n    context: lab\n",
            ":4:14:",
            "both",
        ),
        (
            "hosts:\n  a:\n    url: http://a:1\n",
            ":3:10:",
            "http://a:1",
        ),
        (
            "hosts:\n  a:\n    url: ssh://me@a\n    tls: d\n",
            ":4:10:",
            "tcp:// URL only",
        ),
        (
            "hosts:\n  local:\n    url: ssh://me@a\n",
            ":2:3:",
            "`local`",
        ),
    ];
    for (text, at, what) in cases {
        s.write("study", text);
        let e = s.error(&["a"], true);
        assert!(e.contains(at) && e.contains(what), "{text}: {e}");
    }
    // A context the entry names that does not exist: at the entry's `context`, with the known.
    add_context(s.config(), "lab", "unix:///run/lab.sock", false, false);
    s.write("study", "hosts:\n  a:\n    context: labb\n");
    let e = s.error(&["a"], false);
    assert!(
        e.contains(":3:14:") && e.contains("`labb`") && e.contains("lab"),
        "{e}"
    );
}

#[test]
fn a_name_two_files_or_a_file_and_a_context_define_differently_is_refused_naming_both() {
    let s = setup();
    let study = s.write(
        "study",
        "hosts:\n  lab:\n    url: tcp://10.9.9.9:2376\n    tls: their-ca\n  \
         same:\n    url: ssh://me@box\n",
    );
    let user = s.write(
        "user",
        "hosts:\n  lab:\n    url: tcp://10.0.0.1:2376\n    tls: /mine\n  \
         same:\n    url: ssh://me@box\n",
    );
    let e = s.error(&["lab"], false);
    for part in [
        "host `lab`",
        &study.display().to_string(),
        &user.display().to_string(),
        "tcp://10.9.9.9:2376",
        "tcp://10.0.0.1:2376",
    ] {
        assert!(e.contains(part), "{part} missing: {e}");
    }
    // The same Engine in both is no conflict.
    let got = s.resolve(&["same"], false).unwrap();
    assert_eq!(got[0].endpoint, Endpoint::Ssh("ssh://me@box".into()));

    // A URL given directly whose TLS files two files disagree on.
    s.write(
        "study",
        "hosts:\n  x:\n    url: tcp://10.0.0.1:2376\n    tls: their-ca\n",
    );
    let e = s.error(&["tcp://10.0.0.1:2376"], false);
    assert!(
        e.contains("other TLS files") && e.contains("their-ca") && e.contains("/mine"),
        "{e}"
    );

    // A file's name that is the user's Docker context at another Engine.
    add_context(s.config(), "box", "unix:///run/mine.sock", false, false);
    s.write(
        "study",
        "hosts:\n  box:\n    url: unix:///run/theirs.sock\n",
    );
    let e = s.error(&["box"], false);
    assert!(
        e.contains("Docker context `box`") && e.contains("unix:///run/mine.sock"),
        "{e}"
    );
    s.write("study", "hosts:\n  box:\n    context: box\n");
    assert!(s.resolve(&["box"], false).is_ok());
}

#[test]
fn podman_is_its_own_socket_unless_a_hosts_file_names_it() {
    let s = setup();
    let hosts = resolve_in(&["local".into(), "podman".into()], &s.sources, false).unwrap();
    assert_eq!(
        hosts[1].endpoint,
        Endpoint::Unix("/run/user/1000/podman/podman.sock".into())
    );
    s.write(
        "user",
        "hosts:\n  podman: {url: unix:///var/tmp/p/podman.sock}\n",
    );
    let hosts = resolve_in(&["podman".into()], &s.sources, false).unwrap();
    assert_eq!(
        hosts[0].endpoint,
        Endpoint::Unix("/var/tmp/p/podman.sock".into())
    );
    let none = Sources {
        podman_socket: None,
        ..setup().sources
    };
    let e = resolve_in(&["podman".into()], &none, false).unwrap_err();
    assert!(format!("{e:#}").contains("unix:///…/podman.sock"), "{e:#}");
}
