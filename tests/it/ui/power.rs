//! The machine list's BMC power actions without a browser: an operator powers two machines on
//! at once through their (fake, pinned) Redfish BMCs and sees the result; powering off needs the
//! count typed; a machine without a BMC is reported as failed; a viewer is refused. The machine
//! page shows the power state read and its age (and, to operators, where the BMC is).

use std::time::Duration;

use crate::common::appliance::Appliance;
use crate::raw::{login_as, raw, FORM};
use hyper::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn bulk_power_through_bmcs_from_the_machine_list() {
    let app = Appliance::start("[bmc]\npoll_interval_ms = 100\nretry_backoff_ms = 50\n").await;
    let cert = crate::bmc_fake::cert();
    let mut fakes = Vec::new();
    let mut ids = Vec::new();
    for n in 1..=3u8 {
        let m = app
            .api
            .ok(Method::POST, "/machines", Some(json!({"macs": [format!("52:54:00:9a:00:{n:02x}")]})))
            .await
            .unwrap();
        ids.push(m["id"].as_u64().unwrap());
        if n < 3 {
            let f = crate::bmc_fake::start(
                crate::bmc_fake::Mode::Good,
                Default::default(),
                Duration::from_millis(5),
                &cert,
            )
            .await;
            let bmc = json!({"address": format!("127.0.0.1:{}", f.port), "protocol": "redfish",
                "username": crate::bmc_fake::USER, "password": crate::bmc_fake::PASSWORD, "fingerprint": f.fingerprint});
            app.api.ok(Method::PUT, &format!("/machines/{}/bmc", m["id"]), Some(bmc)).await.unwrap();
            fakes.push(f);
        }
    }
    let (cookie, csrf) = login_as(&app, "olga", "operator").await;
    let c = ("cookie", cookie.as_str());
    let (_, page) = raw(&app, "GET", "/ui/machines", &[c], "").await;
    assert!(page.contains("value=\"bmc_on\"") && page.contains("value=\"bmc_cycle\""), "the list offers BMC power");

    let sel = |ids: &[u64]| ids.iter().map(|i| format!("id={i}")).collect::<Vec<_>>().join("&");
    let (status, resp) =
        raw(&app, "POST", "/ui/machines/bulk", &[c, FORM], &format!("action=bmc_on&{}&csrf={csrf}", sel(&ids[..2])))
            .await;
    assert!(
        status == 303 && resp.contains("notice=powered%20on%20through%20the%20BMC%20%28verified%29%202%20of%202"),
        "{resp}"
    );
    assert!(fakes.iter().all(|f| f.power_state() == "On"));

    // Off needs the count typed; nothing happens without it.
    let off = format!("action=bmc_off&{}&csrf={csrf}", sel(&ids[..2]));
    let (status, _) = raw(&app, "POST", "/ui/machines/bulk", &[c, FORM], &off).await;
    assert_eq!(status, 400);
    assert!(fakes.iter().all(|f| f.power_state() == "On"), "refused: nothing changed");
    let (status, resp) = raw(&app, "POST", "/ui/machines/bulk", &[c, FORM], &format!("{off}&confirm=2")).await;
    assert_eq!(status, 303, "{resp}");
    assert!(fakes.iter().all(|f| f.power_state() == "Off"));

    // A machine without a BMC: reported, the others done.
    let (status, resp) =
        raw(&app, "POST", "/ui/machines/bulk", &[c, FORM], &format!("action=bmc_on&{}&csrf={csrf}", sel(&ids))).await;
    assert!(status == 303 && resp.contains("2%20of%203") && resp.contains("has%20no%20BMC"), "{resp}");

    assert!(fakes.iter().all(|f| f.power_state() == "On"));

    // A viewer's session is refused by the API (and the page offers it nothing to click).
    let (vcookie, vcsrf) = login_as(&app, "vera", "viewer").await;
    let (status, _) = raw(
        &app,
        "POST",
        "/ui/machines/bulk",
        &[("cookie", vcookie.as_str()), FORM],
        &format!("action=bmc_off&confirm=1&{}&csrf={vcsrf}", sel(&ids[..1])),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(fakes[0].power_state(), "On", "nothing changed");

    // The machine page shows the power state read and its age; where the BMC is, to operators.
    let page = format!("/ui/machines/{}", ids[0]);
    let (_, html) = raw(&app, "GET", &page, &[c], "").await;
    assert!(html.contains("Power (BMC)") && html.contains(">on <span class=\"ago\">(read "), "{html}");
    assert!(html.contains(&format!("127.0.0.1:{} (redfish)", fakes[0].port)));
    let (_, html) = raw(&app, "GET", &page, &[("cookie", vcookie.as_str())], "").await;
    assert!(html.contains("Power (BMC)") && !html.contains("(redfish)"), "a viewer sees the state, not the BMC");
    let (_, html) = raw(&app, "GET", &format!("/ui/machines/{}", ids[2]), &[c], "").await;
    assert!(!html.contains("Power (BMC)"), "no BMC, no power line");
    // One that cannot be reached (nothing on port 9): the failed read is shown.
    let bmc =
        json!({"address": "127.0.0.1:9", "protocol": "redfish", "username": "u", "password": "p", "insecure": true});
    app.api.ok(Method::PUT, &format!("/machines/{}/bmc", ids[2]), Some(bmc)).await.unwrap();
    let (_, html) = raw(&app, "GET", &format!("/ui/machines/{}", ids[2]), &[c], "").await;
    assert!(html.contains("not read yet"), "{html}");
    let (st, _) = app
        .api
        .call(Method::POST, &format!("/machines/{}/power", ids[2]), Some(json!({"action": "status"})))
        .await
        .unwrap();
    assert_eq!(st, 502);
    let (_, html) = raw(&app, "GET", &format!("/ui/machines/{}", ids[2]), &[c], "").await;
    assert!(html.contains("the last read failed: cannot reach the BMC"), "{html}");
}
