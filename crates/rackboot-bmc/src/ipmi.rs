//! The IPMI 2.0 driver: Debian's `ipmitool` over lanplus as a subprocess (no maintained Rust
//! crate speaks RMCP+ with its session auth). The password goes in a 0600 file passed with
//! `-f` and deleted afterwards, never in argv or the environment; every run has a timeout that
//! kills it. Argument building and output parsing are pure and tested.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::PowerState;
use crate::BmcError;

/// An ipmitool chassis command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    PowerOn,
    PowerOff,
    /// ACPI soft off.
    PowerSoft,
    PowerCycle,
    PowerReset,
    PowerStatus,
    /// Network boot at the next start only (`options=efiboot` for UEFI).
    BootdevPxe {
        uefi: bool,
    },
}

/// Where and as whom.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub username: String,
    pub cipher_suite: u8,
}

/// ipmitool's arguments for `cmd`; the password is read from `password_file`.
pub fn args(t: &Target, password_file: &Path, cmd: Command) -> Vec<String> {
    // -v: only then does ipmitool say why a session failed ("RAKP 2 HMAC is invalid": the
    // password), which keeps refused credentials apart from an unreachable BMC.
    let mut a: Vec<String> = ["-v", "-I", "lanplus", "-C"].map(String::from).to_vec();
    a.push(t.cipher_suite.to_string());
    a.extend(["-H".into(), t.host.clone(), "-p".into(), t.port.to_string(), "-U".into(), t.username.clone()]);
    a.extend(["-f".into(), password_file.display().to_string()]);
    // One retry of 2 s inside ipmitool; our own timeout and retries bound the rest.
    a.extend(["-N", "2", "-R", "1", "chassis"].map(String::from));
    let tail: &[&str] = match cmd {
        Command::PowerOn => &["power", "on"],
        Command::PowerOff => &["power", "off"],
        Command::PowerSoft => &["power", "soft"],
        Command::PowerCycle => &["power", "cycle"],
        Command::PowerReset => &["power", "reset"],
        Command::PowerStatus => &["power", "status"],
        Command::BootdevPxe { uefi: false } => &["bootdev", "pxe"],
        Command::BootdevPxe { uefi: true } => &["bootdev", "pxe", "options=efiboot"],
    };
    a.extend(tail.iter().map(|s| s.to_string()));
    a
}

/// The state in `chassis power status` output ("Chassis Power is on").
pub fn parse_power(stdout: &str) -> Option<PowerState> {
    let line = stdout.lines().find(|l| l.starts_with("Chassis Power is "))?;
    match line.trim_start_matches("Chassis Power is ").trim() {
        "on" => Some(PowerState::On),
        "off" => Some(PowerState::Off),
        _ => Some(PowerState::Unknown),
    }
}

/// What a failed run means: wrong credentials fail fast, no answer is worth a retry, anything
/// else (an unsupported command: 0xcc) is the BMC refusing.
pub fn classify(stderr: &str) -> BmcError {
    let s = stderr.trim();
    // -v's chatter left out; what is left, on one line.
    let lines: Vec<&str> =
        s.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("Loading IANA")).collect();
    let short: String = lines.join("; ").chars().take(300).collect();
    let lower = s.to_ascii_lowercase();
    // A BMC that answered the session's first messages and then refused or ignored the user
    // (VirtualBMC does not answer RAKP 1 for an unknown user).
    if [
        "rakp 2 hmac is invalid",
        "unauthorized name",
        "invalid user name",
        "insufficient privilege",
        "no response from rakp 1",
    ]
    .iter()
    .any(|m| lower.contains(m))
    {
        BmcError::Auth(short)
    } else if ["unable to establish", "no response", "timeout", "request match not found"]
        .iter()
        .any(|m| lower.contains(m))
    {
        // No answer, or one too late for ipmitool to match it (a BMC busy with the change).
        BmcError::Connect(short)
    } else {
        BmcError::Status { status: 0, detail: format!("ipmitool: {short}") }
    }
}

/// A file holding the password (0600), deleted when dropped.
struct PasswordFile(PathBuf);

impl PasswordFile {
    fn new(password: &str) -> std::io::Result<PasswordFile> {
        let mut r = [0u8; 12];
        getrandom::fill(&mut r).map_err(|e| std::io::Error::other(e.to_string()))?;
        let name: String = r.iter().map(|b| format!("{b:02x}")).collect();
        let path = std::env::temp_dir().join(format!("rackboot-ipmi-{name}"));
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        let file = PasswordFile(path);
        f.write_all(password.as_bytes())?;
        Ok(file)
    }
}

impl Drop for PasswordFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `ipmitool` (the program `bin`) for `cmd`; its stdout on success. Killed at `timeout`.
pub async fn run(bin: &Path, t: &Target, password: &str, cmd: Command, timeout: Duration) -> Result<String, BmcError> {
    let file = PasswordFile::new(password).map_err(|e| BmcError::Other(format!("password file: {e}")))?;
    let child = tokio::process::Command::new(bin)
        .args(args(t, &file.0, cmd))
        .env_remove("IPMI_PASSWORD")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BmcError::Other(format!("running {}: {e}", bin.display())))?;
    let out = tokio::time::timeout(timeout, child.wait_with_output()).await.map_err(|_| BmcError::Timeout(timeout))?;
    let out = out.map_err(|e| BmcError::Other(format!("ipmitool: {e}")))?;
    drop(file);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(classify(&String::from_utf8_lossy(&out.stderr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target { host: "198.18.0.7".into(), port: 623, username: "admin".into(), cipher_suite: 3 }
    }

    #[test]
    fn arguments_carry_the_password_file_never_the_password() {
        let a = args(&target(), Path::new("/tmp/pw"), Command::BootdevPxe { uefi: true });
        assert_eq!(
            a.join(" "),
            "-v -I lanplus -C 3 -H 198.18.0.7 -p 623 -U admin -f /tmp/pw -N 2 -R 1 chassis bootdev pxe options=efiboot"
        );
        let a = args(&target(), Path::new("/tmp/pw"), Command::PowerSoft);
        assert!(a.ends_with(&["chassis".into(), "power".into(), "soft".into()]));
        assert!(!a.iter().any(|x| x == "-P" || x == "-E"), "no password on the command line or in the environment");
        let legacy = args(&target(), Path::new("/tmp/pw"), Command::BootdevPxe { uefi: false });
        assert!(legacy.ends_with(&["bootdev".into(), "pxe".into()]));
    }

    #[test]
    fn output_and_errors_are_understood() {
        assert_eq!(parse_power("Chassis Power is on\n"), Some(PowerState::On));
        assert_eq!(parse_power("Chassis Power is off\n"), Some(PowerState::Off));
        assert_eq!(parse_power("garbage"), None);
        assert!(matches!(
            classify("> RAKP 2 HMAC is invalid\nError: Unable to establish IPMI v2 / RMCP+ session"),
            BmcError::Auth(_)
        ));
        assert!(matches!(
            classify("> Error: no response from RAKP 1 message\nError: Unable to establish"),
            BmcError::Auth(_)
        ));
        assert!(matches!(classify("Error in open session response message : unauthorized name"), BmcError::Auth(_)));
        assert!(matches!(
            classify("Unable to set Chassis Power Control to Down/Off\nIPMI Request Match NOT FOUND"),
            BmcError::Connect(_)
        ));
        assert!(matches!(
            classify("Get Auth Capabilities error\nError: Unable to establish IPMI v2 / RMCP+ session"),
            BmcError::Connect(_)
        ));
        assert!(matches!(
            classify("Set Chassis Power Control to Cycle failed: Invalid data field in request"),
            BmcError::Status { .. }
        ));
    }

    #[test]
    fn the_password_file_is_private_and_goes_away() {
        use std::os::unix::fs::PermissionsExt;
        let f = PasswordFile::new("s3cret").unwrap();
        let path = f.0.clone();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "s3cret");
        drop(f);
        assert!(!path.exists());
    }
}
