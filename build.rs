//! Embeds the git revision so the status endpoint and logs say exactly what
//! is deployed. Falls back to "unknown" outside a git checkout (a crate
//! tarball, a CI cache) rather than failing the build.

use std::process::Command;

fn main() {
    let revision = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|out| out.status.success() && !out.stdout.is_empty());
    let suffix = if dirty && revision != "unknown" {
        "-dirty"
    } else {
        ""
    };
    println!("cargo:rustc-env=FAILOVER_REVISION={revision}{suffix}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
    println!("cargo:rerun-if-changed=.git/index");
}
