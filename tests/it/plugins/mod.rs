//! Vendor plugins: the store, a shared store, the bench.

mod bench;
mod shared;
mod store;
