// Writes the probe's src/main.rs to OUT_DIR without its inner doc comments (`//!`), which cannot
// stand where src/alloc.rs includes it, so the allocator variant runs the baseline's code unchanged.
fn main() {
    let main = std::fs::read_to_string("src/main.rs").expect("reading src/main.rs");
    let body: String = main
        .lines()
        .filter(|l| !l.starts_with("//!"))
        .map(|l| format!("{l}\n"))
        .collect();
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(format!("{out}/main.rs"), body).expect("writing main.rs");
    println!("cargo:rerun-if-changed=src/main.rs");
}
