//! The appliance's own account on the machine's BMC, set up in band (`/dev/ipmi0`, ipmitool's
//! open interface): no password is typed anywhere. The user slot already named `username` is
//! reused, else the first unnamed one from 2 up (1 is IPMI's anonymous user); it gets a fresh
//! random password, administrator privilege on the LAN channel, IPMI messaging and link auth,
//! and is enabled; the password is tested by the BMC itself and the slot read back. The
//! commands that carry the password go through `ipmitool exec FILE` (a 0600 file in the work
//! directory, removed at once), so it never shows in a process list, and any ipmitool output is
//! scrubbed of it before it reaches the job's output. The password goes to the appliance in a
//! [`BmcAccountReport`] on the agent's TLS connection.

use std::path::Path;
use std::time::Duration;

use crate::jobs::Sink;
use crate::wire::{BmcAccountReport, Stream};

/// One ipmitool run, at most.
const IPMITOOL_SECS: u64 = 60;
/// Password length: 16 fits every BMC (IPMI 1.5's limit); 62 symbols give about 95 bits.
const PASSWORD_LEN: usize = 16;

/// A user slot as `ipmitool user list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub id: u8,
    pub name: String,
    pub ipmi_msg: bool,
    pub privilege: String,
}

/// Parses `ipmitool user list CHANNEL`: `ID Name Callin Link-Auth IPMI-Msg Priv-Limit` rows, the
/// name empty for an unused slot.
pub fn parse_users(text: &str) -> Vec<Slot> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(id) = words.next().and_then(|w| w.parse::<u8>().ok()) else { continue };
        let rest: Vec<&str> = words.collect();
        // The name is everything before the first of the four true/false columns.
        let Some(flags) = rest.iter().position(|w| *w == "true" || *w == "false") else { continue };
        if rest.len() < flags + 4 {
            continue;
        }
        out.push(Slot {
            id,
            name: rest[..flags].join(" "),
            ipmi_msg: rest[flags + 2] == "true",
            privilege: rest[flags + 3..].join(" "),
        });
    }
    out
}

/// The slot for `username`: the one so named, else the first unnamed one from 2 up.
pub fn pick_slot(slots: &[Slot], username: &str) -> Option<(u8, bool)> {
    if let Some(s) = slots.iter().find(|s| s.name == username) {
        return Some((s.id, false));
    }
    slots.iter().find(|s| s.id >= 2 && s.name.is_empty()).map(|s| (s.id, true))
}

/// The `ipmitool exec` script that sets the slot up and tests the password.
pub fn script(id: u8, new: bool, username: &str, password: &str, channel: u8) -> String {
    let mut s = String::new();
    if new {
        s += &format!("user set name {id} {username}\n");
    }
    s += &format!("user set password {id} {password} 16\n");
    s += &format!("user priv {id} 4 {channel}\n");
    s += &format!("channel setaccess {channel} {id} callin=on ipmi=on link=on privilege=4\n");
    s += &format!("user enable {id}\n");
    s += &format!("user test {id} 16 {password}\n");
    s
}

/// A random password of letters and digits.
fn password() -> std::io::Result<String> {
    const SYMBOLS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::new();
    let mut f = std::fs::File::open("/dev/urandom")?;
    while out.len() < PASSWORD_LEN {
        let mut b = [0u8; 32];
        std::io::Read::read_exact(&mut f, &mut b)?;
        // 248 = 4 * 62: bytes past it are dropped, so every symbol is as likely.
        out.extend(b.iter().filter(|x| **x < 248).map(|x| SYMBOLS[(*x % 62) as usize] as char));
    }
    out.truncate(PASSWORD_LEN);
    Ok(out)
}

async fn ipmitool(program: &Path, args: &[&str]) -> Result<String, String> {
    let run = tokio::process::Command::new(program).args(args).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(IPMITOOL_SECS), run)
        .await
        .map_err(|_| format!("ipmitool {} did not finish within {IPMITOOL_SECS} s", args.join(" ")))?
        .map_err(|e| format!("ipmitool: {e} (BootOS has it; an installed system may not)"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return Ok(text);
    }
    let hint =
        if Path::new("/dev/ipmi0").exists() { "" } else { " (no /dev/ipmi0: no BMC in band, or no driver for it)" };
    Err(format!("ipmitool {} failed{hint}: {}", args.join(" "), text.trim()))
}

/// Sets the account up; what goes to the appliance. Progress lines go to the job's output.
pub async fn set_up(
    sink: &mut Sink<'_>,
    program: &Path,
    workdir: &Path,
    username: &str,
    channel: u8,
) -> Result<BmcAccountReport, String> {
    let ch = channel.to_string();
    let slots = parse_users(&ipmitool(program, &["user", "list", &ch]).await?);
    let (id, new) = pick_slot(&slots, username)
        .ok_or_else(|| format!("no free user slot on channel {channel} for {username:?}"))?;
    sink.send(
        Stream::Stdout,
        format!("bmc account: user {id} ({}) on channel {channel}\n", if new { "new" } else { "reset" }),
    )
    .await;
    let password = password().map_err(|e| format!("no random password: {e}"))?;
    let file = workdir.join("bmc-account.ipmitool");
    write_private(workdir, &file, &script(id, new, username, &password, channel))
        .map_err(|e| format!("writing {}: {e}", file.display()))?;
    let run = ipmitool(program, &["exec", &file.display().to_string()]).await;
    let _ = std::fs::remove_file(&file);
    let out = match run {
        Ok(t) => t,
        Err(e) => return Err(e.replace(&password, "********")),
    }
    .replace(&password, "********");
    sink.send(Stream::Stdout, out.clone()).await;
    if !out.contains("Success") {
        return Err(format!("the BMC did not accept the new password for user {id}"));
    }
    // Read back: named, IPMI messaging on, administrator.
    let after = parse_users(&ipmitool(program, &["user", "list", &ch]).await?);
    let slot = after.iter().find(|s| s.id == id).cloned();
    match slot {
        Some(s) if s.name == username && s.ipmi_msg && s.privilege.starts_with("ADMINISTRATOR") => {}
        other => return Err(format!("user {id} reads back as {other:?}")),
    }
    let lan = crate::inventory::parse_ipmitool_lan(&ipmitool(program, &["lan", "print", &ch]).await?);
    let address = lan
        .as_ref()
        .and_then(|l| l.ip.clone())
        .ok_or_else(|| format!("the BMC has no LAN address on channel {channel}"))?;
    let mac = lan.and_then(|l| l.mac);
    sink.send(Stream::Stdout, format!("bmc account: {username} (user {id}) set up on {address}, channel {channel}\n"))
        .await;
    Ok(BmcAccountReport { user_id: id, username: username.into(), password, channel, address, mac })
}

fn write_private(dir: &Path, file: &Path, body: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let _ = std::fs::remove_file(file);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(file)?;
    f.write_all(body.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "ID  Name\t     Callin  Link Auth\tIPMI Msg   Channel Priv Limit\n\
        1                    true    false      true       USER\n\
        2   admin            true    false      true       ADMINISTRATOR\n\
        3   ops team         true    true       true       OPERATOR\n\
        4                    true    false      false      Unknown (0x00)\n\
        5                    true    false      false      NO ACCESS\n";

    #[test]
    fn the_user_list_is_read_with_empty_and_spaced_names() {
        let slots = parse_users(LIST);
        assert_eq!(slots.len(), 5);
        assert_eq!(slots[0], Slot { id: 1, name: String::new(), ipmi_msg: true, privilege: "USER".into() });
        assert_eq!(slots[2].name, "ops team");
        assert_eq!(slots[3].privilege, "Unknown (0x00)");
        assert!(parse_users("garbage\n\n12 x\n").is_empty());
    }

    #[test]
    fn a_named_slot_is_reused_else_the_first_free_one_from_two() {
        let slots = parse_users(LIST);
        assert_eq!(pick_slot(&slots, "admin"), Some((2, false)));
        assert_eq!(pick_slot(&slots, "rackboot"), Some((4, true)), "1 is the anonymous user, 2 and 3 are taken");
        assert_eq!(pick_slot(&slots[..3], "rackboot"), None, "no free slot");
    }

    #[test]
    fn the_script_sets_up_and_tests_the_password() {
        let s = script(4, true, "rackboot", "pw", 1);
        assert_eq!(s.lines().next(), Some("user set name 4 rackboot"));
        assert!(s.contains("user set password 4 pw 16\n") && s.ends_with("user test 4 16 pw\n"));
        assert!(s.contains("channel setaccess 1 4 callin=on ipmi=on link=on privilege=4\n"));
        assert!(!script(2, false, "admin", "pw", 1).contains("set name"), "a reused slot keeps its name");
    }

    #[test]
    fn passwords_are_long_random_and_plain() {
        let (a, b) = (password().unwrap(), password().unwrap());
        assert_eq!(a.len(), PASSWORD_LEN);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, b);
    }
}
