//! `sqlx::migrate!` (in `startup`) embeds `migrations/` at compile time: a new migration must
//! rebuild the binary.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
