//! Article 000's probe (src/main.rs, unchanged) with mimalloc as the global allocator instead of
//! the system's: the `allocator` factor of wait-1m.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

include!(concat!(env!("OUT_DIR"), "/main.rs"));
