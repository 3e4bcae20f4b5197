//! A child program confined by Landlock, the kernel's unprivileged sandbox: it reads and runs
//! what the system's programs and libraries are made of, reads the files it is given, writes the
//! ones it is given, and touches nothing else (the appliance's data directory, its keys and its
//! database included), whatever it is tricked into opening. The rules are made in the parent; the
//! child only applies them between fork and exec (two system calls, no allocation).

use std::path::Path;
use std::process::Command;

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI,
};

/// What the system's programs are made of: readable and executable in the sandbox.
const SYSTEM: &[&str] = &["/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/ld.so.cache"];

/// Why a program could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("this kernel has no Landlock sandbox ({0})")]
    Unsupported(String),
    #[error("{0}: {1}")]
    Path(String, String),
}

fn refused(p: &Path) -> impl FnOnce(landlock::RulesetError) -> SandboxError + '_ {
    move |e| SandboxError::Path(p.display().to_string(), e.to_string())
}

/// Sets `cmd` to run confined: reading and executing the system's files, reading `read`,
/// reading and writing `write` (each must exist), nothing else. Refused on a kernel without
/// Landlock: the caller decides whether to run the program at all.
pub fn confine(cmd: &mut Command, read: &[&Path], write: &[&Path]) -> Result<(), SandboxError> {
    let abi = ABI::V1;
    let unsupported = |e: landlock::RulesetError| SandboxError::Unsupported(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(unsupported)?
        .create()
        .map_err(unsupported)?;
    let rule = |path: &Path, access| {
        let fd = PathFd::new(path).map_err(|e| SandboxError::Path(path.display().to_string(), e.to_string()))?;
        Ok::<_, SandboxError>(PathBeneath::new(fd, access))
    };
    for p in SYSTEM.iter().map(Path::new).filter(|p| p.exists()) {
        // A directory's rights would be refused on a file (ld.so.cache).
        let access =
            if p.is_dir() { AccessFs::from_read(abi) } else { AccessFs::from_read(abi) & AccessFs::from_file(abi) };
        ruleset = ruleset.add_rule(rule(p, access)?).map_err(refused(p))?;
    }
    for p in read {
        ruleset = ruleset.add_rule(rule(p, AccessFs::ReadFile.into())?).map_err(refused(p))?;
    }
    for p in write {
        ruleset = ruleset.add_rule(rule(p, AccessFs::ReadFile | AccessFs::WriteFile)?).map_err(refused(p))?;
    }
    let ruleset = std::sync::Mutex::new(Some(ruleset));
    // SAFETY: the closure runs in the child between fork and exec; it takes the prepared ruleset
    // (an uncontended lock) and makes the prctl and landlock_restrict_self calls, nothing that
    // allocates on the way to success.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            let taken = ruleset.lock().ok().and_then(|mut r| r.take());
            match taken.map(|r| r.restrict_self()) {
                Some(Ok(_)) => Ok(()),
                // The child does not run unconfined.
                _ => Err(std::io::Error::from_raw_os_error(nix::errno::Errno::EPERM as i32)),
            }
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confined_program_reads_only_what_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let (given, secret, out) = (dir.path().join("given"), dir.path().join("secret"), dir.path().join("out"));
        std::fs::write(&given, "the image\n").unwrap();
        std::fs::write(&secret, "the admin token\n").unwrap();
        std::fs::write(&out, "").unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(format!(
            "cat {g} > {o}; cat {s} >> {o} 2>/dev/null || echo refused >> {o}; cat /etc/hostname >/dev/null 2>&1 || echo refused >> {o}",
            g = given.display(),
            s = secret.display(),
            o = out.display()
        ));
        match confine(&mut cmd, &[&given], &[&out]) {
            Err(SandboxError::Unsupported(why)) => {
                eprintln!("SKIPPED: {why}");
                return;
            }
            other => other.unwrap(),
        }
        assert!(cmd.status().unwrap().success());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "the image\nrefused\nrefused\n");
        // The parent is not confined.
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the admin token\n");
    }
}
