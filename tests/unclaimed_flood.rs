//! Unauthenticated growth is bounded: a flood of random MACs through DHCP and `/boot/ipxe`
//! creates at most `server.max_unclaimed_machines` records (the oldest unclaimed go first), the
//! evictions are counted in /metrics, and the data file stops growing once the cap is reached.

mod common;

use std::time::Duration;

use common::*;
use dhcproto::v4::MessageType;
use dhcproto::Encodable;
use hyper::Method;

fn random_mac(round: u32, n: u32) -> [u8; 6] {
    let b = (round << 20 | n).to_be_bytes();
    [0x02, 0xf1, b[0], b[1], b[2], b[3]]
}

/// One flood round: DISCOVERs and boot-script fetches for `n` new MACs each.
async fn flood(lab: &Lab, round: u32, n: u32) {
    let http = lab.app.as_ref().unwrap().http_addr;
    for i in 0..n {
        let mac = random_mac(round, i);
        lab.send_raw(&pxe(msg(MessageType::Discover, mac, round << 20 | i), 7).to_vec().unwrap()).await;
        let m = random_mac(round, n + i).map(|b| format!("{b:02x}")).join(":");
        assert!(http_get(http, &format!("/boot/ipxe?mac={m}")).await.starts_with("HTTP/1.0 200"));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
}

#[tokio::test]
async fn a_random_mac_flood_keeps_the_cmdb_bounded() {
    let lab = Lab::start("").await;
    let cap = 300;
    lab.app.as_ref().unwrap().cmdb.growth().set_cap(cap);
    let file = lab.dir.path().join("rackboot.redb");
    flood(&lab, 1, 1_500).await;
    let size_after_first = std::fs::metadata(&file).unwrap().len();
    flood(&lab, 2, 1_500).await;
    let size_after_second = std::fs::metadata(&file).unwrap().len();

    println!("data file: {size_after_first} bytes after 3,000 MACs, {size_after_second} after 6,000 (cap {cap})");
    let page = lab.api.ok(Method::GET, "/machines?limit=1", None).await.unwrap();
    let total = page["total"].as_u64().unwrap();
    assert!(total <= cap as u64, "{total} machines kept with a cap of {cap}");
    let metrics = http_get(lab.app.as_ref().unwrap().http_addr, "/metrics").await;
    let evicted: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("rackboot_cmdb_unclaimed_evicted_total "))
        .expect("eviction counter in /metrics")
        .parse()
        .unwrap();
    assert!(evicted >= 3_000, "{evicted} evicted of ~4,500+ MACs seen");
    assert!(
        size_after_second <= size_after_first + size_after_first / 4,
        "the file keeps growing past the cap: {size_after_first} -> {size_after_second}"
    );
}
