//! Stamps the git revision into the binary (`--version`, `/health`, the
//! `failover_agent_build_info` metric). A build outside a git checkout (a
//! source tarball) says "unknown" unless FAILOVER_AGENT_REVISION is set.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=FAILOVER_AGENT_REVISION");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for watched in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        let path = root.join(watched);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let revision = std::env::var("FAILOVER_AGENT_REVISION")
        .ok()
        .filter(|r| !r.trim().is_empty())
        .or_else(|| {
            let out = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .current_dir(&root)
                .output()
                .ok()?;
            let text = String::from_utf8(out.stdout).ok()?;
            out.status.success().then(|| text.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FAILOVER_AGENT_REVISION={revision}");
}
