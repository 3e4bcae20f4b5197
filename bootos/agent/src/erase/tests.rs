use super::*;

const MIB: u64 = 1 << 20;

fn progress(total: u64) -> (Progress, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let now = Instant::now();
    (Progress { tx, stop: Arc::new(AtomicBool::new(false)), total, done: 0, started: now, next: now }, rx)
}

/// A disk file of `size` bytes, every byte 0xa5.
fn disk(dir: &Path, size: u64) -> Target {
    let path = dir.join("disk");
    std::fs::write(&path, vec![0xa5u8; size as usize]).unwrap();
    Target { path, size, kind: Kind::Other("virtio".into()), partitions: vec![], discard: false }
}

#[test]
fn quick_covers_each_end_of_the_disk_and_of_every_partition() {
    let t = Target {
        path: "/dev/x".into(),
        size: 1024 * MIB,
        kind: Kind::Nvme,
        // One partition inside the disk's first 64 MiB, one in the middle, one running to the end.
        partitions: vec![(MIB, 32 * MIB), (300 * MIB, 100 * MIB), (900 * MIB, 124 * MIB)],
        discard: false,
    };
    assert_eq!(
        quick_regions(&t),
        vec![
            (0, 64 * MIB),
            (300 * MIB, 304 * MIB),
            (396 * MIB, 400 * MIB),
            (900 * MIB, 904 * MIB),
            (960 * MIB, 1024 * MIB)
        ]
    );
    // A disk smaller than both edges is zeroed whole, once.
    let small = Target { size: 10 * MIB, partitions: vec![(MIB, 8 * MIB)], ..t };
    assert_eq!(quick_regions(&small), vec![(0, 10 * MIB)]);
    assert_eq!(bytes_to_write(&[small], EraseMode::Quick), 10 * MIB);
}

#[test]
fn quick_zeroes_the_regions_and_leaves_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = disk(dir.path(), 200 * MIB);
    t.partitions = vec![(100 * MIB, 20 * MIB)];
    let (mut p, mut rx) = progress(bytes_to_write(std::slice::from_ref(&t), EraseMode::Quick));
    let said = erase_one(&t, EraseMode::Quick, &mut p).unwrap();
    assert!(said.contains("1 partitions' ends"), "{said}");
    let data = std::fs::read(&t.path).unwrap();
    let zero = |a: u64, b: u64| data[a as usize..b as usize].iter().all(|&b| b == 0);
    let kept = |a: u64, b: u64| data[a as usize..b as usize].iter().all(|&b| b == 0xa5);
    assert!(zero(0, 64 * MIB) && zero(136 * MIB, 200 * MIB), "the disk's ends");
    assert!(zero(100 * MIB, 104 * MIB) && zero(116 * MIB, 120 * MIB), "the partition's ends");
    assert!(kept(64 * MIB, 100 * MIB) && kept(104 * MIB, 116 * MIB) && kept(120 * MIB, 136 * MIB), "the rest");
    assert_eq!(p.done, p.total);
    assert!(rx.try_recv().unwrap().starts_with("erase: "), "progress is reported");
}

#[test]
fn zero_writes_every_byte_and_reports_progress() {
    // On the temporary directory's file system the disk (here: the file system) zeroes the
    // ranges itself; on tmpfs, which has no ZERO_RANGE, the zeros are written.
    let shm = Path::new("/dev/shm");
    let dirs: Vec<tempfile::TempDir> =
        [Some(tempfile::tempdir().unwrap()), shm.is_dir().then(|| tempfile::tempdir_in(shm).unwrap())]
            .into_iter()
            .flatten()
            .collect();
    for dir in &dirs {
        let t = disk(dir.path(), 9 * MIB + 4096);
        let (mut p, mut rx) = progress(t.size);
        let said = erase_one(&t, EraseMode::Zero, &mut p).unwrap();
        assert!(std::fs::read(&t.path).unwrap().iter().all(|&b| b == 0), "{said}");
        assert_eq!(std::fs::metadata(&t.path).unwrap().len(), t.size, "the disk did not grow");
        let tmpfs = nix::sys::statfs::statfs(dir.path()).unwrap().filesystem_type() == nix::sys::statfs::TMPFS_MAGIC;
        let how = if tmpfs { " (written)".to_string() } else { format!(" (zero-out: {} bytes)", t.size) };
        assert!(said.ends_with(&format!("{} bytes zeroed{how}", t.size)), "{said}");
        let line = rx.try_recv().unwrap();
        assert!(line.starts_with("erase: ") && line.contains('%'), "{line}");
    }
}

#[test]
fn a_cancel_stops_the_writing() {
    let dir = tempfile::tempdir().unwrap();
    let t = disk(dir.path(), 16 * MIB);
    let (mut p, _rx) = progress(t.size);
    p.stop.store(true, Ordering::Relaxed);
    let err = erase_one(&t, EraseMode::Zero, &mut p).unwrap_err();
    assert!(err.contains("cancelled"), "{err}");
    assert!(std::fs::read(&t.path).unwrap()[8 * MIB as usize..].iter().all(|&b| b == 0xa5), "it stopped early");
}

#[test]
fn plan_refuses_what_is_not_a_disk_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"keep").unwrap();
    let sys = System { sys: dir.path().join("sys"), mounts: dir.path().join("mounts") };
    let cases = [
        (vec![], "the inventory lists none"),
        (vec![file.display().to_string()], "not a disk under /dev"),
        (vec!["/dev/../etc/passwd".to_string()], "not a disk under /dev"),
        (vec!["/dev/null".to_string()], "not a block device"),
        (vec!["/dev/no-such-disk".to_string()], "/dev/no-such-disk: "),
    ];
    for (disks, want) in cases {
        let err = plan(&sys, &disks, EraseMode::Zero).unwrap_err();
        assert!(err.contains(want), "{disks:?}: {err}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"keep");
}

#[test]
fn secure_is_refused_for_a_disk_that_cannot_erase_itself() {
    let t = Target {
        path: "/dev/vda".into(),
        size: 1,
        kind: Kind::Other("virtio".into()),
        partitions: vec![],
        discard: false,
    };
    let err = secure::check(&t).unwrap_err();
    assert!(err.contains("virtio disk has neither") && err.contains("use zero"), "{err}");
}

#[test]
fn the_kind_and_partitions_come_from_sysfs() {
    let dir = tempfile::tempdir().unwrap();
    let sys = System { sys: dir.path().into(), mounts: dir.path().join("mounts") };
    let dev = dir.path().join("devices/pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0/block/sda");
    std::fs::create_dir_all(dev.join("sda2")).unwrap();
    std::fs::create_dir_all(dev.join("holders")).unwrap();
    for (f, v) in [("sda2/partition", "2"), ("sda2/start", "4096"), ("sda2/size", "8192")] {
        std::fs::write(dev.join(f), v).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("class/block")).unwrap();
    std::os::unix::fs::symlink(&dev, dir.path().join("class/block/sda")).unwrap();
    assert_eq!(sys.kind("sda"), Kind::Ata);
    assert_eq!(sys.partitions("sda"), vec![("sda2".to_string(), 4096 * 512, 8192 * 512)]);
    std::fs::write(&sys.mounts, "/dev/sda2 /mnt/rescue/sda2 ext4 ro 0 0\n/dev/sdb1 /x ext4 rw 0 0\n").unwrap();
    assert_eq!(sys.mounted(&["sda2".into(), "sda".into()]), vec![("sda2".into(), "/mnt/rescue/sda2".into())]);
}

#[test]
fn hdparm_security_is_read_as_the_kernel_prints_it() {
    let ok = "Security: \n\tMaster password revision code = 65534\n\t\tsupported\n\tnot\tenabled\n\tnot\tlocked\n\tnot\tfrozen\n\tnot\texpired: security count\n";
    assert_eq!(secure::ata_ready(ok), Ok(()));
    let frozen = ok.replace("\tnot\tfrozen", "\t\tfrozen");
    assert!(secure::ata_ready(&frozen).unwrap_err().contains("frozen"));
    let set = ok.replace("\tnot\tenabled", "\t\tenabled");
    assert!(secure::ata_ready(&set).unwrap_err().contains("password"));
    assert!(secure::ata_ready("Commands/features:\n").is_err());
}
