//! A throwaway OpenLDAP server (Debian's slapd) for the directory tests: an `mdb` database for
//! `dc=example,dc=com` loaded from LDIF with `slapadd`, LDAPS and StartTLS-capable LDAP on
//! loopback ports with a certificate of a CA made here, stopped and removed when dropped.
//! `None` where slapd is not installed (tools/setup.sh installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The suffix every entry sits under.
pub const BASE: &str = "dc=example,dc=com";
/// The directory manager (`rootdn`), whose password is [`ROOT_PW`]: changes from the tests.
pub const ROOT_DN: &str = "cn=admin,dc=example,dc=com";
pub const ROOT_PW: &str = "manager-secret-1";

pub struct Slapd {
    dir: tempfile::TempDir,
    pid: Option<u32>,
    pub ldaps_port: u16,
    pub ldap_port: u16,
}

impl Slapd {
    /// Starts slapd with `ldif` (entries under [`BASE`], which this adds) loaded.
    pub fn start(ldif: &str) -> Option<Slapd> {
        if !Path::new("/usr/sbin/slapd").exists() {
            eprintln!("SKIPPED: slapd is not installed (tools/setup.sh installs it)");
            return None;
        }
        let prefix = format!("rackboot-slapd.{}.", std::process::id());
        let dir = tempfile::Builder::new().prefix(&prefix).tempdir_in("/tmp").unwrap();
        let d = dir.path();
        let (ca, cert, key, _) = super::loopback_pki("slapd test CA");
        std::fs::write(d.join("ca.pem"), ca).unwrap();
        std::fs::write(d.join("server.pem"), cert).unwrap();
        std::fs::write(d.join("server.key"), key).unwrap();
        std::fs::create_dir(d.join("db")).unwrap();
        let conf = format!(
            "include /etc/ldap/schema/core.schema\ninclude /etc/ldap/schema/cosine.schema\n\
             include /etc/ldap/schema/inetorgperson.schema\ninclude /etc/ldap/schema/nis.schema\n\
             modulepath /usr/lib/ldap\nmoduleload back_mdb\npidfile {d}/slapd.pid\n\
             TLSCertificateFile {d}/server.pem\nTLSCertificateKeyFile {d}/server.key\n\
             database mdb\nsuffix \"{BASE}\"\nrootdn \"{ROOT_DN}\"\nrootpw {ROOT_PW}\ndirectory {d}/db\n\
             access to attrs=userPassword by anonymous auth by * none\n\
             access to * by users read by anonymous none\n",
            d = d.display()
        );
        std::fs::write(d.join("slapd.conf"), conf).unwrap();
        let top = format!("dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n\n");
        std::fs::write(d.join("data.ldif"), format!("{top}{ldif}")).unwrap();
        let add = Command::new("/usr/sbin/slapadd")
            .args(["-f", &path(d, "slapd.conf"), "-l", &path(d, "data.ldif")])
            .output()
            .unwrap();
        assert!(add.status.success(), "slapadd: {}", String::from_utf8_lossy(&add.stderr));
        let (ldaps_port, ldap_port) = (super::free_port(), super::free_port());
        let mut s = Slapd { dir, pid: None, ldaps_port, ldap_port };
        s.up();
        Some(s)
    }

    /// Starts slapd (again) on its ports; returns once it answers.
    pub fn up(&mut self) {
        let urls = format!("ldaps://127.0.0.1:{}/ ldap://127.0.0.1:{}/", self.ldaps_port, self.ldap_port);
        let run = Command::new("/usr/sbin/slapd")
            .args(["-f", &path(self.dir.path(), "slapd.conf"), "-h", &urls])
            .output()
            .unwrap();
        assert!(run.status.success(), "slapd: {}", String::from_utf8_lossy(&run.stderr));
        let deadline = Instant::now() + Duration::from_secs(10);
        let pidfile = self.dir.path().join("slapd.pid");
        loop {
            let listening = std::net::TcpStream::connect(("127.0.0.1", self.ldaps_port)).is_ok();
            if let (true, Ok(pid)) = (listening, std::fs::read_to_string(&pidfile)) {
                self.pid = pid.trim().parse().ok();
                return;
            }
            assert!(Instant::now() < deadline, "slapd did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops slapd (the directory stops answering).
    pub fn down(&mut self) {
        if let Some(pid) = self.pid.take() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The CA of the server's certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Applies an LDIF change (`changetype: modify`, ...) as the directory manager.
    pub fn modify(&self, ldif: &str) {
        use std::io::Write;
        let mut child = Command::new("ldapmodify")
            .args(["-x", "-H", &format!("ldap://127.0.0.1:{}", self.ldap_port), "-D", ROOT_DN, "-w", ROOT_PW])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(ldif.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success(), "ldapmodify:\n{ldif}");
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.down();
    }
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}
