use std::path::Path;

use super::*;

/// A stand-in install tree, names in the mixed case Windows media has.
fn media(dir: &Path) {
    for (path, body) in [
        ("Boot/BCD", "bios bcd"),
        ("Boot/boot.sdi", "sdi"),
        ("Boot/Fonts/wgl4_boot.ttf", "font"),
        ("EFI/Boot/bootx64.efi", "MZ bootmgfw"),
        ("EFI/Microsoft/Boot/BCD", "uefi bcd"),
        ("sources/boot.wim", "not a real wim"),
        ("setup.exe", "MZ setup"),
    ] {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
}

const PLAIN: ImportOptions = ImportOptions { replace: false, share_address: None };

/// Hidden directories left in the media directory (the per-name lock files are expected).
fn leftovers(root: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(root.join(DIR)) else { return Vec::new() };
    let names = dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned());
    names.filter(|n| n.starts_with('.') && !n.ends_with(".lock")).collect()
}

#[test]
fn an_import_lowercases_places_the_boot_manager_and_records_the_hashes() {
    let (src, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    media(src.path());
    let m = import(root.path(), "w2022", src.path(), &PLAIN).unwrap();
    let dir = root.path().join("windows/w2022");
    assert_eq!(std::fs::read_to_string(dir.join("bootmgfw.efi")).unwrap(), "MZ bootmgfw");
    assert_eq!(m.bootmgr_from, "efi/boot/bootx64.efi");
    assert!(dir.join("efi/microsoft/boot/bcd").is_file() && dir.join("boot/fonts/wgl4_boot.ttf").is_file());
    assert_eq!((m.files, m.startnet), (7, false));
    let sums: Vec<&str> = m.sha256.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(sums, ["bootmgfw.efi", "efi/microsoft/boot/bcd", "boot/boot.sdi", "sources/boot.wim"]);
    assert_eq!(m.sha256[2].1, crate::provision::sha256_file(&dir.join("boot/boot.sdi")).unwrap());
    assert_eq!(list(root.path()), vec![m]);
    assert!(leftovers(root.path()).is_empty());
}

#[test]
fn bad_media_is_refused_with_the_reason_and_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    media(src.path());
    std::fs::remove_file(src.path().join("sources/boot.wim")).unwrap();
    let err = import(root.path(), "w", src.path(), &PLAIN).unwrap_err().to_string();
    assert!(err.contains("sources/boot.wim"), "{err}");
    assert!(!root.path().join("windows/w").exists() && leftovers(root.path()).is_empty());

    // Two names that differ only in case would collide once lowered.
    media(src.path());
    std::fs::write(src.path().join("SETUP.EXE"), "other").unwrap();
    let err = import(root.path(), "w", src.path(), &PLAIN).unwrap_err().to_string();
    assert!(err.contains("differ only in case"), "{err}");
    assert!(leftovers(root.path()).is_empty());

    let file = src.path().join("setup.exe");
    let err = import(root.path(), "w", &file, &PLAIN).unwrap_err().to_string();
    assert!(err.contains("mount the ISO first"), "{err}");
    for bad in ["unattend", "../x", "a/b", ""] {
        assert!(import(root.path(), bad, src.path(), &PLAIN).is_err(), "{bad:?}");
    }
}

#[test]
fn media_already_there_is_kept_unless_replaced() {
    let (src, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    media(src.path());
    import(root.path(), "w", src.path(), &PLAIN).unwrap();
    std::fs::write(src.path().join("setup.exe"), "MZ newer").unwrap();
    let err = import(root.path(), "w", src.path(), &PLAIN).unwrap_err().to_string();
    assert!(err.contains("--replace"), "{err}");
    assert_eq!(std::fs::read_to_string(root.path().join("windows/w/setup.exe")).unwrap(), "MZ setup");
    import(root.path(), "w", src.path(), &ImportOptions { replace: true, share_address: None }).unwrap();
    assert_eq!(std::fs::read_to_string(root.path().join("windows/w/setup.exe")).unwrap(), "MZ newer");
    assert!(leftovers(root.path()).is_empty());
}

#[test]
fn backslash_paths_map_into_the_clients_media_and_stay_confined() {
    let (src, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    media(src.path());
    import(root.path(), "w", src.path(), &PLAIN).unwrap();
    let r = root.path();
    // A UEFI client's BCD is the media's UEFI one.
    assert_eq!(tftp_path(r, Some("w"), r"\Boot\BCD"), "windows/w/efi/microsoft/boot/bcd");
    assert_eq!(tftp_path(r, Some("w"), r"\sources\boot.wim"), "windows/w/sources/boot.wim");
    assert_eq!(tftp_path(r, Some("w"), r"\Boot\Fonts\WGL4_BOOT.TTF"), "windows/w/boot/fonts/wgl4_boot.ttf");
    // A client booting no media asks the boot directory, as lowercased forward slashes.
    assert_eq!(tftp_path(r, None, r"\EFI\x.efi"), "efi/x.efi");
    // Leaving the media or the boot directory is refused by TFTP's own confinement.
    for asked in [r"\..\..\etc\passwd", r"\Boot\..\..\..\x"] {
        let rel = tftp_path(r, Some("w"), asked);
        assert!(crate::tftp::request::resolve(r, &rel).is_err(), "{asked} -> {rel}");
    }
    let wim = crate::tftp::request::resolve(r, &tftp_path(r, Some("w"), r"\SOURCES\BOOT.WIM")).unwrap();
    assert_eq!(std::fs::read_to_string(wim).unwrap(), "not a real wim");
}

#[test]
fn a_killed_import_is_swept_by_the_next_and_a_running_one_is_not_raced() {
    let (src, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    media(src.path());
    let base = root.path().join(DIR);
    for stale in [".import-w-4242", ".replaced-w-4243"] {
        std::fs::create_dir_all(base.join(stale).join("sources")).unwrap();
    }
    std::fs::create_dir_all(base.join(".import-other-1")).unwrap();
    import(root.path(), "w", src.path(), &PLAIN).unwrap();
    assert!(!base.join(".import-w-4242").exists() && !base.join(".replaced-w-4243").exists());
    assert!(base.join(".import-other-1").exists(), "another name's import is not this one's to sweep");
    assert_eq!(list(root.path()).len(), 1, "hidden directories are not media");
    // An import of the same name while one holds the lock is refused at once.
    let lock = std::fs::OpenOptions::new().write(true).open(base.join(".w.lock")).unwrap();
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock).unwrap();
    let opts = ImportOptions { replace: true, share_address: None };
    let err = import(root.path(), "w", src.path(), &opts).unwrap_err().to_string();
    assert!(err.contains("another import of w is running"), "{err}");
}

#[test]
fn startnet_maps_the_share_and_runs_setup_with_the_machines_answer_file() {
    use crate::windows::wim::{startnet_cmd, WINPESHL_INI};
    let s = startnet_cmd("198.18.0.1".parse().unwrap(), "w2022");
    assert!(s.contains("\r\nwpeinit\r\n"), "{s}");
    assert!(s.contains(r"net use R: \\198.18.0.1\rackboot"), "{s}");
    // Every MAC getmac lists is tried: the first with an answer file is this machine's.
    assert!(s.contains(r"if exist R:\unattend\%%~m.xml (set MAC=%%~m& goto mapped)"), "{s}");
    assert!(s.contains(r"R:\w2022\setup.exe /unattend:R:\unattend\%MAC%.xml"), "{s}");
    assert!(WINPESHL_INI.starts_with("[LaunchApps]\r\n") && WINPESHL_INI.contains("startnet.cmd"));
    // getmac's dashes are the answer files' names on the share.
    assert_eq!(
        crate::windows::unattend::share_path("52:54:00:ab:cd:ef".parse().unwrap()),
        "unattend/52-54-00-ab-cd-ef.xml"
    );
}

#[test]
fn links_in_the_media_read_nothing_of_the_appliances_and_it_must_fit() {
    let (src, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    media(src.path());
    let secret = root.path().join("admin.token");
    std::fs::write(&secret, "the admin token").unwrap();
    // The boot manager and a BCD are links to an appliance file: left out, so refused.
    std::fs::remove_file(src.path().join("EFI/Boot/bootx64.efi")).unwrap();
    std::os::unix::fs::symlink(&secret, src.path().join("EFI/Boot/bootx64.efi")).unwrap();
    std::os::unix::fs::symlink(&secret, src.path().join("bootmgfw.efi")).unwrap();
    let err = import(root.path(), "w", src.path(), &PLAIN).unwrap_err().to_string();
    assert!(err.contains("no bootmgfw.efi"), "{err}");
    assert!(!root.path().join("windows/w").exists() && leftovers(root.path()).is_empty());
    assert!(!wim::regular_file(&src.path().join("bootmgfw.efi"), 1 << 20), "a link is not a boot manager");
    assert!(!wim::regular_file(&src.path().join("setup.exe"), 3), "nor a file past the bound");
    assert!(wim::regular_file(&src.path().join("setup.exe"), 8));

    // Larger than the room: refused before the file that would pass it, the copy removed.
    let to = root.path().join("copy");
    let (mut files, mut bytes) = (0, 0);
    let room = Room { free: 20, keep: 10 };
    let err = copy_lowercased(src.path(), &to, &room, &mut files, &mut bytes).unwrap_err().to_string();
    assert!(err.contains("more than the 0 MB free here"), "{err}");
    assert!(bytes <= 10, "{bytes} bytes copied");
}
