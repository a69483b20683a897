//! Export the OCI bundle of one tool call, for inspection or to run it with `runc run`.

use sandbox::export::{ExportRequest, export_bundle};
use sandbox::{Access, Profile, ProfileConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sandbox::init();
    let base = std::env::temp_dir().join(format!("sandbox-export-example-{}", std::process::id()));
    let workspace = base.join("workspace");
    std::fs::create_dir_all(&workspace)?;
    let profile = Profile::new(ProfileConfig {
        workspace_root: workspace.clone(),
        workspace_read: Access::Allow,
        workspace_write: Access::Allow,
        host_read: Access::Allow,
        command: Access::Allow,
        ..ProfileConfig::default()
    })?;
    let request = ExportRequest {
        argv: vec!["/bin/sh".into(), "-c".into(), "echo confined".into()],
        cwd: workspace.clone(),
        env_snapshot: std::env::vars_os().collect(),
        ..ExportRequest::default()
    };
    let out = base.join("bundle");
    let bundle = export_bundle(&profile, &request, &out)?;
    println!("exported {} mounts", bundle.mounts);
    for e in &bundle.standard_report.entries {
        println!("standard runtime: {}: {}", e.feature, e.status);
    }
    println!("config.json: {} bytes", std::fs::metadata(out.join("config.json"))?.len());
    std::fs::remove_dir_all(&base)?;
    Ok(())
}
