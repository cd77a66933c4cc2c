//! Article 000's probe (src/main.rs, unchanged) with jemalloc as the global allocator instead of
//! the system's: the `allocator` factor of wait-1m.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

include!(concat!(env!("OUT_DIR"), "/main.rs"));
