//! cloud-init for installed nodes: the user-data an operator gives (per task, per machine, per
//! rack; a machine's wins over its task's, a task's over its rack's), its bounds, and the
//! NoCloud `meta-data` rackboot serves.

/// Longest user-data, in bytes (cloud-init reads it whole; NoCloud seeds are small).
pub const MAX_USER_DATA: usize = 64 * 1024;

/// Refuses user-data that is too long, holds a NUL, or is not one of cloud-init's formats
/// (`#cloud-config`, a `#!` script, `#include`, `#cloud-boothook`, a MIME multipart).
pub fn check_user_data(text: &str) -> Result<(), String> {
    if text.len() > MAX_USER_DATA {
        return Err(format!("user_data is {} bytes; at most {MAX_USER_DATA}", text.len()));
    }
    if text.contains('\0') {
        return Err("user_data holds a NUL byte".into());
    }
    let first = text.lines().next().unwrap_or("").trim_end();
    let known = ["#cloud-config", "#!", "#include", "#cloud-boothook", "Content-Type: multipart/"];
    if !known.iter().any(|k| first.starts_with(k)) {
        return Err(format!(
            "user_data must start with #cloud-config, #!, #include, #cloud-boothook or a MIME multipart header, not {:?}",
            first.chars().take(40).collect::<String>()
        ));
    }
    Ok(())
}

/// Which user-data a machine gets: its own, else its install's task's, else its rack's.
pub fn pick<'a>(machine: Option<&'a str>, task: Option<&'a str>, rack: Option<&'a str>) -> Option<&'a str> {
    machine.or(task).or(rack)
}

/// The instance id of one install of a machine: a new install (a new run) is a new instance,
/// so cloud-init runs once per install, not once per boot.
pub fn instance_id(machine: u64, run: Option<u64>) -> String {
    match run {
        Some(r) => format!("rackboot-{machine}-run-{r}"),
        None => format!("rackboot-{machine}"),
    }
}

/// NoCloud's `meta-data` (YAML; the values are an id and a checked hostname, nothing to quote).
pub fn meta_data(instance_id: &str, hostname: &str) -> String {
    format!("instance-id: {instance_id}\nlocal-hostname: {hostname}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_is_bounded_and_must_be_a_cloud_init_format() {
        assert!(check_user_data("#cloud-config\nruncmd: [[touch, /x]]\n").is_ok());
        assert!(check_user_data("#!/bin/sh\necho hi\n").is_ok());
        assert!(check_user_data("Content-Type: multipart/mixed; boundary=x\n").is_ok());
        assert!(check_user_data("runcmd: []\n").unwrap_err().contains("#cloud-config"));
        assert!(check_user_data("#cloud-config\n\0").unwrap_err().contains("NUL"));
        let big = format!("#cloud-config\n{}", "#".repeat(MAX_USER_DATA));
        assert!(check_user_data(&big).unwrap_err().contains("at most"));
    }

    #[test]
    fn a_machines_own_wins_then_the_tasks_then_the_racks() {
        assert_eq!(pick(Some("m"), Some("t"), Some("r")), Some("m"));
        assert_eq!(pick(None, Some("t"), Some("r")), Some("t"));
        assert_eq!(pick(None, None, Some("r")), Some("r"));
        assert_eq!(pick(None, None, None), None);
        assert_eq!(instance_id(7, Some(12)), "rackboot-7-run-12");
        assert_eq!(
            meta_data("rackboot-7-run-12", "node-07"),
            "instance-id: rackboot-7-run-12\nlocal-hostname: node-07\n"
        );
    }
}
