//! What a task names its machines by: hostname patterns, addresses from a pool, and whether a
//! hardware profile fits a machine's vendor and model.

use std::net::Ipv4Addr;

use crate::mac::Mac;

/// Expands a hostname pattern: `{n}`, `{n:02}` (zero-padded to width), `{mac}`.
pub fn hostname(pattern: &str, n: u32, mac: Option<Mac>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or_else(|| format!("unclosed '{{' in {pattern:?}"))? + start;
        let field = &rest[start + 1..end];
        match field.split_once(':') {
            None if field == "n" => out.push_str(&n.to_string()),
            None if field == "mac" => {
                let m = mac.ok_or("{mac} needs a machine with a MAC")?;
                out.push_str(&m.to_string().replace(':', ""));
            }
            Some(("n", width)) => {
                let w: usize = width.parse().map_err(|_| format!("bad width {width:?} in {pattern:?}"))?;
                out.push_str(&format!("{n:0w$}"));
            }
            _ => return Err(format!("unknown field {{{field}}} in {pattern:?} (use {{n}}, {{n:03}}, {{mac}})")),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    let out = out.to_ascii_lowercase();
    if !crate::records::valid_hostname(&out) {
        return Err(format!("{pattern:?} gives {out:?}, which is not a valid hostname"));
    }
    Ok(out)
}

/// The `index`-th (1-based) address of `FIRST-LAST`, skipping the ones `taken`.
pub fn ip_from_pool(pool: (Ipv4Addr, Ipv4Addr), taken: &dyn Fn(Ipv4Addr) -> bool, index: u32) -> Option<Ipv4Addr> {
    let (a, b) = (u32::from(pool.0), u32::from(pool.1));
    (a..=b).map(Ipv4Addr::from).filter(|ip| !taken(*ip)).nth(index.checked_sub(1)? as usize)
}

/// Parses `FIRST-LAST`.
pub fn parse_pool(s: &str) -> Result<(Ipv4Addr, Ipv4Addr), String> {
    let (a, b) = s.split_once('-').ok_or_else(|| format!("ip_pool {s:?} is not FIRST-LAST"))?;
    let a: Ipv4Addr = a.trim().parse().map_err(|_| format!("bad first address in {s:?}"))?;
    let b: Ipv4Addr = b.trim().parse().map_err(|_| format!("bad last address in {s:?}"))?;
    if a > b {
        return Err(format!("ip_pool {s:?} ends before it starts"));
    }
    Ok((a, b))
}

/// Whether a hardware profile's vendor/model constraints fit the inventory (empty: anything).
pub fn profile_fits(vendors: &[String], models: &[String], vendor: Option<&str>, model: Option<&str>) -> bool {
    let has = |list: &[String], v: Option<&str>| {
        list.is_empty()
            || v.is_some_and(|v| list.iter().any(|x| v.to_ascii_lowercase().contains(&x.to_ascii_lowercase())))
    };
    has(vendors, vendor) && has(models, model)
}
