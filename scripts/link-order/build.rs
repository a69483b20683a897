//! The build script of the packages whose binaries carry the Linux helper (`sandbox`, the
//! benchmark and test binaries, the examples): it asks the linker to place the functions the
//! helper's worker runs next to each other (`helper.order`, beside this file). The kernel maps
//! a binary's code 64 KiB around each page fault, and the worker's functions were spread over
//! most of the text, so a spawn's helper mapped 2.9 MiB of our code; side by side, 0.8 MiB
//! (issue 16, target 4: the helper's peak RSS, 4.7 → 2.6 MiB). Layout only: no code, symbol or
//! behaviour changes, and a name the file lists but the binary lacks is skipped.
//!
//! Applied where rustc links with its own LLD by default (x86_64 Linux, GNU): elsewhere, when
//! the build names its own linker (a `linker` in cargo's configuration, `-C linker` or
//! `-fuse-ld` in RUSTFLAGS), or with `SANDBOX_LINK_ORDER=0`, it does nothing. Regenerate the
//! file with `scripts/link-order/collect.sh` after large changes to the helper's path; a stale
//! file costs memory, never correctness.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=SANDBOX_LINK_ORDER");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let order = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("../scripts/link-order/helper.order");
    println!("cargo:rerun-if-changed={}", order.display());
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let lld_by_default = var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker =
        std::env::var_os("RUSTC_LINKER").is_some() || flags.contains("linker") || flags.contains("fuse-ld");
    if !lld_by_default || own_linker || var("SANDBOX_LINK_ORDER") == "0" {
        return;
    }
    let Ok(order) = order.canonicalize() else {
        println!("cargo:warning=scripts/link-order/helper.order is missing: the helper's code is not clustered");
        return;
    };
    println!("cargo:rustc-link-arg=-Wl,--symbol-ordering-file={}", order.display());
    println!("cargo:rustc-link-arg=-Wl,--no-warn-symbol-ordering");
}
