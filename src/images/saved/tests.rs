use std::path::PathBuf;

use super::*;

/// An image file member by member, as the tests craft it.
struct Member {
    name: String,
    kind: EntryType,
    data: Vec<u8>,
    link: Option<String>,
}

fn file(name: &str, data: &[u8]) -> Member {
    Member {
        name: name.into(),
        kind: EntryType::Regular,
        data: data.to_vec(),
        link: None,
    }
}

fn write(dir: &Path, members: &[Member]) -> PathBuf {
    let path = dir.join("image.tar");
    let mut b = tar::Builder::new(File::create(&path).unwrap());
    for m in members {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(m.kind);
        h.set_mode(0o644);
        h.set_size(m.data.len() as u64);
        if let Some(link) = &m.link {
            h.set_link_name(link).unwrap();
        }
        // Names the tar crate would refuse to set (absolute, `..`) go in raw.
        let raw = m.name.as_bytes();
        h.as_old_mut().name[..raw.len()].copy_from_slice(raw);
        h.set_cksum();
        b.append(&h, m.data.as_slice()).unwrap();
    }
    b.finish().unwrap();
    path
}

const LAYER: &str = "1111111111111111111111111111111111111111111111111111111111111111";

/// A well-formed image file tagged `tags`, plus the members `extra` after it.
fn image(tags: &[&str], extra: Vec<Member>) -> (Vec<Member>, String) {
    let config = br#"{"architecture":"amd64","os":"linux"}"#;
    let id = hex::encode(Sha256::digest(config));
    let manifest = serde_json::json!([{
        "Config": format!("{id}.json"),
        "RepoTags": tags,
        "Layers": [format!("{LAYER}/layer.tar")],
    }]);
    let mut members = vec![
        Member {
            name: format!("{LAYER}/"),
            kind: EntryType::Directory,
            data: vec![],
            link: None,
        },
        file(&format!("{LAYER}/VERSION"), b"1.0"),
        file(&format!("{LAYER}/json"), b"{}"),
        file(&format!("{LAYER}/layer.tar"), &[0u8; 1024]),
        file(&format!("{id}.json"), config),
        file("manifest.json", manifest.to_string().as_bytes()),
        file("repositories", br#"{"debian":{"latest":"x"}}"#),
    ];
    members.extend(extra);
    (members, id)
}

fn refused(members: &[Member]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), members);
    format!("{:#}", inspect(&path).unwrap_err())
}

#[test]
fn a_well_formed_file_is_read_and_its_copy_names_one_tag() {
    let dir = tempfile::tempdir().unwrap();
    let (members, id) = image(&["parkbench/go:abc", "debian:latest"], vec![]);
    let path = write(dir.path(), &members);
    let seen = inspect(&path).unwrap();
    assert_eq!(seen.id, id);
    assert_eq!(seen.tags, ["parkbench/go:abc", "debian:latest"]);
    let out = dir.path().join("copy.tar");
    let copied = quarantine(&path, "parkbench-rerun/0123/go:abc", &out).unwrap();
    assert_eq!(copied.id, id, "the image ID does not change");
    let again = inspect(&out).unwrap();
    assert_eq!(again.tags, ["parkbench-rerun/0123/go:abc"]);
    let names: Vec<String> = tar::Archive::new(File::open(&out).unwrap())
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert!(!names.contains(&"repositories".to_string()), "{names:?}");
}

#[test]
fn a_second_manifest_is_refused() {
    let (mut members, _) = image(&["parkbench/go:abc"], vec![]);
    members.push(file(
        "manifest.json",
        br#"[{"Config":"x.json","RepoTags":["debian:latest"],"Layers":[]}]"#,
    ));
    let e = refused(&members);
    assert!(e.contains("manifest.json is there twice"), "{e}");
}

#[test]
fn a_member_outside_the_format_is_refused() {
    for (member, what) in [
        (file("../escape", b"x"), "\"../escape\""),
        (file("/etc/passwd", b"x"), "\"/etc/passwd\""),
        (file("notes.txt", b"x"), "\"notes.txt\""),
        (file(&format!("{LAYER}/extra"), b"x"), "extra"),
    ] {
        let (members, _) = image(&["t:1"], vec![member]);
        let e = refused(&members);
        assert!(
            e.contains(what) && e.contains("not part of an image file"),
            "{e}"
        );
    }
}

#[test]
fn links_are_only_a_layer_shared_with_another() {
    let other = "2222222222222222222222222222222222222222222222222222222222222222";
    let link = |target: &str| Member {
        name: format!("{other}/layer.tar"),
        kind: EntryType::Symlink,
        data: vec![],
        link: Some(target.into()),
    };
    let dir = |name: &str| Member {
        name: format!("{name}/"),
        kind: EntryType::Directory,
        data: vec![],
        link: None,
    };
    let (members, _) = image(
        &["t:1"],
        vec![dir(other), link(&format!("../{LAYER}/layer.tar"))],
    );
    let tmp = tempfile::tempdir().unwrap();
    inspect(&write(tmp.path(), &members)).unwrap();
    let (members, _) = image(&["t:1"], vec![dir(other), link("/")]);
    let e = refused(&members);
    assert!(e.contains("not at another layer's layer.tar"), "{e}");
    let (members, _) = image(
        &["t:1"],
        vec![Member {
            name: "root".into(),
            kind: EntryType::Symlink,
            data: vec![],
            link: Some("/".into()),
        }],
    );
    let e = refused(&members);
    assert!(e.contains("not part of an image file"), "{e}");
}

#[test]
fn a_configuration_must_hash_to_its_name() {
    let (mut members, id) = image(&["t:1"], vec![]);
    for m in &mut members {
        if m.name == format!("{id}.json") {
            m.data = br#"{"architecture":"amd64","os":"linux","Cmd":["sh"]}"#.to_vec();
        }
    }
    let e = refused(&members);
    assert!(e.contains("not its name"), "{e}");
}

#[test]
fn several_images_in_one_file_are_refused() {
    let (mut members, id) = image(&["t:1"], vec![]);
    let two = serde_json::json!([
        {"Config": format!("{id}.json"), "RepoTags": ["t:1"], "Layers": []},
        {"Config": format!("{id}.json"), "RepoTags": ["debian:latest"], "Layers": []},
    ]);
    for m in &mut members {
        if m.name == "manifest.json" {
            m.data = two.to_string().into_bytes();
        }
    }
    let e = refused(&members);
    assert!(e.contains("2 entries"), "{e}");
}

#[test]
fn a_link_to_a_layer_the_file_does_not_hold_is_refused() {
    let other = "2222222222222222222222222222222222222222222222222222222222222222";
    let missing = "3333333333333333333333333333333333333333333333333333333333333333";
    let (members, _) = image(
        &["t:1"],
        vec![
            Member {
                name: format!("{other}/"),
                kind: EntryType::Directory,
                data: vec![],
                link: None,
            },
            Member {
                name: format!("{other}/layer.tar"),
                kind: EntryType::Symlink,
                data: vec![],
                link: Some(format!("../{missing}/layer.tar")),
            },
        ],
    );
    let e = refused(&members);
    assert!(e.contains("which is no file of it"), "{e}");
}

/// The OCI layout an Engine from version 25 on writes: blobs named by their sha256, an index whose
/// image names the copy rewrites, and manifest.json beside them.
#[test]
fn the_oci_layout_is_read_and_its_copy_names_one_image() {
    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let layer = vec![7u8; 2048];
    let (cid, lid) = (
        hex::encode(Sha256::digest(&config)),
        hex::encode(Sha256::digest(&layer)),
    );
    let manifest = serde_json::json!([{
        "Config": format!("blobs/sha256/{cid}"),
        "RepoTags": ["parkbench/go:abc"],
        "Layers": [format!("blobs/sha256/{lid}")],
        "LayerSources": {},
    }]);
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.index.v1+json", "digest": "sha256:00", "size": 1,
        "annotations": {"io.containerd.image.name": "docker.io/library/debian:latest",
                        "org.opencontainers.image.ref.name": "latest"}}]});
    let dir = |name: &str| Member {
        name: name.into(),
        kind: EntryType::Directory,
        data: vec![],
        link: None,
    };
    let members = vec![
        dir("blobs/"),
        dir("blobs/sha256/"),
        file(&format!("blobs/sha256/{cid}"), &config),
        file(&format!("blobs/sha256/{lid}"), &layer),
        file("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#),
        file("index.json", index.to_string().as_bytes()),
        file("manifest.json", manifest.to_string().as_bytes()),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), &members);
    assert_eq!(inspect(&path).unwrap().id, cid);
    let out = tmp.path().join("copy.tar");
    quarantine(&path, "parkbench-rerun/0123/go:abc", &out).unwrap();
    assert_eq!(inspect(&out).unwrap().tags, ["parkbench-rerun/0123/go:abc"]);
    let mut copied = tar::Archive::new(File::open(&out).unwrap());
    let index: serde_json::Value = copied
        .entries()
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.path().unwrap().to_str() == Some("index.json"))
        .map(|e| serde_json::from_reader(e).unwrap())
        .unwrap();
    let names = &index["manifests"][0]["annotations"];
    assert_eq!(
        names["io.containerd.image.name"],
        "parkbench-rerun/0123/go:abc"
    );
    assert_eq!(names["org.opencontainers.image.ref.name"], "abc");
    // A blob that does not hash to its name is refused.
    let mut bad = members;
    bad[3] = file(&format!("blobs/sha256/{lid}"), &[8u8; 2048]);
    let e = refused(&bad);
    assert!(e.contains("not its name"), "{e}");
}

/// An image file in Podman's form: the layer as `<its sha256>.tar`, its folder's `layer.tar` a link to it.
fn podman_image(layer_data: &[u8], layer_name: Option<&str>) -> Vec<Member> {
    let layer = hex::encode(Sha256::digest(layer_data));
    let layer_name = layer_name.map_or(format!("{layer}.tar"), str::to_string);
    let config = br#"{"architecture":"amd64","os":"linux"}"#;
    let id = hex::encode(Sha256::digest(config));
    let manifest = serde_json::json!([{
        "Config": format!("{id}.json"),
        "RepoTags": ["docker.io/parkbench/go:1"],
        "Layers": [&layer_name],
    }]);
    vec![
        file(&layer_name, layer_data),
        file(&format!("{id}.json"), config),
        Member {
            name: format!("{LAYER}/layer.tar"),
            kind: EntryType::Symlink,
            data: vec![],
            link: Some(format!("../{layer_name}")),
        },
        file(&format!("{LAYER}/VERSION"), b"1.0"),
        file(&format!("{LAYER}/json"), b"{}"),
        file("manifest.json", manifest.to_string().as_bytes()),
        file("repositories", br#"{"docker.io/parkbench/go":{"1":"x"}}"#),
    ]
}

#[test]
fn podmans_layer_files_are_read_and_each_must_hash_to_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &podman_image(&[7u8; 1024], None));
    let image = inspect(&path).unwrap();
    assert_eq!(image.tags, ["docker.io/parkbench/go:1"]);
    let copy = dir.path().join("copy.tar");
    quarantine(&path, "parkbench-rerun/a/go:1", &copy).unwrap();
    assert_eq!(inspect(&copy).unwrap().tags, ["parkbench-rerun/a/go:1"]);

    let altered = format!("{}.tar", hex::encode(Sha256::digest([8u8; 1024])));
    let e = refused(&podman_image(&[7u8; 1024], Some(&altered)));
    assert!(e.contains("not its name"), "{e}");
}
