//! Unit tests of the build plan: references, cycles, order and the unavailable cascade.

use std::path::Path;

use super::*;
use crate::images::pin::{Mirror, Mmdebstrap, Source, Url, UrlFormat};

const SHA: &str = "31d11c66df592f6de454d5a29f01ac9ce8268b5f676f29f21be6fd9922aad66d";

fn pin(name: &str, source: Source) -> Pin {
    Pin {
        name: name.into(),
        version: "1".into(),
        sha256: SHA.into(),
        sources: vec![source],
        notes: vec![],
        lock: None,
    }
}

fn rootfs(name: &str) -> Pin {
    pin(
        name,
        Source::Mmdebstrap(Mmdebstrap {
            suite: "bookworm".into(),
            variant: "minbase".into(),
            packages: vec![],
            source_date_epoch: 1,
            mirror: Mirror::Host,
            remove: vec![],
        }),
    )
}

fn url(name: &str) -> Pin {
    pin(
        name,
        Source::Url(Url {
            url: format!("https://example.org/{name}.tar.gz"),
            sha256: None,
            format: UrlFormat::GoTarball,
        }),
    )
}

fn pins() -> Pins {
    Pins::from_pins(
        Path::new("toolchains"),
        [
            rootfs("debian-base"),
            rootfs("debian-trixie"),
            url("rust"),
            url("node"),
        ],
    )
}

fn recipe(name: &str, text: &str) -> Recipe {
    Recipe::parse(name, text).unwrap()
}

/// The kit in small: two toolchains on two bases, a sampler, probes on each.
fn kit() -> Vec<Recipe> {
    vec![
        recipe(
            "toolchain-rust",
            "parents: {BASE: base}\nartifacts: {rust.tar: rust}",
        ),
        recipe(
            "toolchain-node",
            "parents: {BASE: debian-trixie}\nartifacts: {node.tar: node}",
        ),
        recipe("sampler", "parents: {RUST: toolchain-rust}"),
        recipe(
            "rust-tokio",
            "parents: {BASE: base, RUST: toolchain-rust, SAMPLER: sampler}\nprobe: true",
        ),
        recipe(
            "node",
            "parents: {BASE: debian-trixie, NODE: toolchain-node, SAMPLER: sampler}\nprobe: true",
        ),
    ]
}

fn names(graph: &Graph) -> Vec<&str> {
    graph.nodes().iter().map(Node::name).collect()
}

#[test]
fn rootfs_pins_become_base_images_and_order_follows_parents() {
    let graph = Graph::new(kit(), &pins()).unwrap();
    assert_eq!(
        names(&graph),
        [
            "base",
            "debian-trixie",
            "toolchain-node",
            "toolchain-rust",
            "sampler",
            "node",
            "rust-tokio"
        ]
    );
    assert_eq!(
        graph.get("base"),
        Some(&Node::Rootfs {
            name: "base".into(),
            pin: "debian-base".into()
        })
    );
    assert_eq!(
        graph.get("debian-trixie").unwrap().pins(),
        ["debian-trixie"]
    );
    assert!(graph.get("node").unwrap().is_probe());
    assert!(!graph.get("sampler").unwrap().is_probe());
}

#[test]
fn an_unknown_parent_names_the_file_and_what_to_do() {
    let mut recipes = kit();
    recipes.push(recipe("go", "parents: {GO: toolchain-go}"));
    let err = format!("{:#}", Graph::new(recipes, &pins()).unwrap_err());
    assert!(
        err.contains("docker/go/image.yaml")
            && err.contains("parents.GO names image \"toolchain-go\"")
            && err.contains("add docker/toolchain-go/"),
        "{err}"
    );
}

#[test]
fn an_unknown_pin_names_the_missing_pin_file() {
    let recipes = vec![recipe(
        "toolchain-go",
        "parents: {BASE: base}\nartifacts: {go.tar: go}",
    )];
    let err = format!("{:#}", Graph::new(recipes, &pins()).unwrap_err());
    assert!(
        err.contains("docker/toolchain-go/image.yaml")
            && err.contains("artifacts.go.tar")
            && err.contains("toolchains/go.yaml"),
        "{err}"
    );
}

#[test]
fn a_cycle_is_named() {
    let recipes = vec![
        recipe("a", "parents: {P: c}"),
        recipe("b", "parents: {P: a, BASE: base}"),
        recipe("c", "parents: {P: b}"),
        recipe("d", "parents: {BASE: base}"),
    ];
    let err = format!("{:#}", Graph::new(recipes, &pins()).unwrap_err());
    assert!(err.contains("cycle: a → c → b → a"), "{err}");
    let err = format!(
        "{:#}",
        Graph::new(vec![recipe("a", "parents: {P: a}")], &pins()).unwrap_err()
    );
    assert!(err.contains("cycle: a → a"), "{err}");
}

#[test]
fn a_recipe_named_like_a_base_image_is_refused() {
    let err = format!(
        "{:#}",
        Graph::new(vec![recipe("debian-trixie", "")], &pins()).unwrap_err()
    );
    assert!(
        err.contains("docker/debian-trixie") && err.contains("rename"),
        "{err}"
    );
}

#[test]
fn an_unavailable_pin_takes_its_images_and_their_children_only() {
    let graph = Graph::new(kit(), &pins()).unwrap();
    let failed = BTreeMap::from([("node".to_string(), "  - curl failed".to_string())]);
    let plan = simulate(&graph, &failed);
    let lost: Vec<_> = plan
        .iter()
        .filter_map(|(n, why)| why.as_ref().map(|w| (n.as_str(), w.as_str())))
        .collect();
    assert_eq!(
        lost,
        [
            (
                "toolchain-node",
                "pin node (toolchains/node.yaml) cannot be produced here; its sources failed:\n\
                 \x20 - curl failed"
            ),
            ("node", "its parent image toolchain-node is unavailable"),
        ]
    );
    let built: Vec<_> = plan
        .iter()
        .filter(|(_, why)| why.is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(
        built,
        [
            "base",
            "debian-trixie",
            "toolchain-rust",
            "sampler",
            "rust-tokio"
        ]
    );

    // The sampler needs Rust, and every probe needs the sampler.
    let failed = BTreeMap::from([("rust".to_string(), "no rustup".to_string())]);
    let plan = simulate(&graph, &failed);
    let built: Vec<_> = plan
        .iter()
        .filter(|(_, why)| why.is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(built, ["base", "debian-trixie", "toolchain-node"]);

    let plan = simulate(&graph, &BTreeMap::new());
    assert!(plan.iter().all(|(_, why)| why.is_none()));
}

#[test]
fn a_url_only_pin_whose_download_fails_is_unavailable_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let cache = crate::images::cache::Cache::open(dir.path()).unwrap();
    let node = crate::images::artifact::tests::unreachable_pin("node");
    let Err(crate::images::artifact::EnsureError::Unavailable { pin, reason }) =
        crate::images::artifact::ensure(&cache, &node)
    else {
        panic!("a failed download leaves the pin unavailable");
    };
    let graph = Graph::new(kit(), &pins()).unwrap();
    let plan = simulate(&graph, &BTreeMap::from([(pin, reason)]));
    let lost: Vec<_> = plan
        .iter()
        .filter(|(_, why)| why.is_some())
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(lost, ["toolchain-node", "node"]);
    let why = plan[2].1.as_deref().unwrap();
    assert!(
        why.contains("toolchains/node.yaml") && why.contains("curl"),
        "{why}"
    );
    let built = plan.iter().filter(|(_, why)| why.is_none()).count();
    assert_eq!(built, plan.len() - 2);
}

#[test]
fn a_rootfs_pin_needs_an_image_name() {
    let pins = Pins::from_pins(Path::new("toolchains"), [rootfs("Debian-Sid")]);
    let err = format!("{:#}", Graph::new(vec![], &pins).unwrap_err());
    assert!(
        err.contains("toolchains/Debian-Sid.yaml") && err.contains("lowercase"),
        "{err}"
    );
}

#[test]
fn only_keeps_the_named_images_and_what_they_are_built_from() {
    let graph = Graph::new(kit(), &pins()).unwrap();
    let only = graph.only(&["rust-tokio".into()]).unwrap();
    assert_eq!(
        names(&only),
        ["base", "toolchain-rust", "sampler", "rust-tokio"]
    );
    let err = graph.only(&["nope".into()]).unwrap_err().to_string();
    assert!(
        err.contains("\"nope\"") && err.contains("rust-tokio"),
        "{err}"
    );
}

#[test]
fn an_unknown_parent_of_a_recipe_read_from_its_file_names_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("go");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(
        dir.join(RECIPE),
        "# Go.\nprobe: true\nparents:\n  BASE: base\n  GO: toolchain-go\n",
    )
    .unwrap();
    let mut recipes = kit();
    recipes.push(Recipe::load(&dir).unwrap());
    let err = format!("{:#}", Graph::new(recipes, &pins()).unwrap_err());
    let want = format!("{}:5:7: parents.GO names image", dir.join(RECIPE).display());
    assert!(err.starts_with(&want), "{err}");
}

/// What a build does when the pins in `unavailable` (name → why) cannot be produced: every image
/// in build order with `None` when it is built, or the reason it is not.
fn simulate(
    graph: &Graph,
    unavailable: &BTreeMap<String, String>,
) -> Vec<(String, Option<String>)> {
    let mut schedule = Schedule::new(graph);
    loop {
        let ready = schedule.ready();
        if ready.is_empty() {
            break;
        }
        for node in ready {
            match node
                .pins()
                .into_iter()
                .find(|p| unavailable.contains_key(*p))
            {
                Some(pin) => schedule.unavailable(node.name(), pin_reason(pin, &unavailable[pin])),
                None => schedule.built(node.name()),
            }
        }
    }
    let lost: BTreeMap<String, String> = schedule.unavailable_images().into_iter().collect();
    graph
        .nodes
        .iter()
        .map(|n| (n.name().to_owned(), lost.get(n.name()).cloned()))
        .collect()
}
