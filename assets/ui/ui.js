// rackboot web UI: the page's one live stream. An element with data-live names the stream;
// each `timeline` frame is an <li> rendered by the server (HTML-escaped there) that goes on
// top of the list, each `state` frame the machine's state in words, each `job` frame a job's
// block (replacing the old one), each `output` frame text to append to a job's output. No inline script: the
// Content-Security-Policy forbids it.
(function () {
  "use strict";
  // One element from server-rendered (escaped) HTML.
  function fragment(html) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    return tpl.content.firstElementChild;
  }
  function start() {
    var list = document.querySelector("[data-live]");
    if (!list || !window.EventSource) { return; }
    var status = document.getElementById("live-status");
    var source = new EventSource(list.getAttribute("data-live"));
    source.addEventListener("open", function () {
      if (status) { status.textContent = "Live: newest first; new events appear as they happen."; }
    });
    source.addEventListener("error", function () {
      if (status) { status.textContent = "Live updates paused; reconnecting…"; }
    });
    source.addEventListener("timeline", function (ev) {
      var item = fragment(ev.data);
      if (!item || (item.id && document.getElementById(item.id))) { return; }
      list.insertBefore(item, list.firstChild);
      while (list.children.length > 500) { list.removeChild(list.lastChild); }
    });
    source.addEventListener("job", function (ev) {
      var item = fragment(ev.data);
      var jobs = document.getElementById("jobs");
      if (!item || !jobs) { return; }
      var old = item.id && document.getElementById(item.id);
      if (old) {
        old.replaceWith(item);
      } else {
        jobs.insertBefore(item, jobs.firstChild);
      }
      var none = document.getElementById("no-jobs");
      if (none) { none.remove(); }
    });
    source.addEventListener("output", function (ev) {
      var chunk = JSON.parse(ev.data);
      var pre = document.getElementById("job-" + Number(chunk.job) + "-output");
      if (pre) { pre.textContent += chunk.text; }
    });
    source.addEventListener("state", function (ev) {
      var el = document.getElementById("machine-state");
      if (!el) { return; }
      el.textContent = ev.data;
      el.className = "state state-" + ev.data.replace(/[^a-z-]/g, "");
    });
    window.addEventListener("pagehide", function () { source.close(); });
  }
  // A rack page: its elevation rows, its picture (SVG) and flags arrive whole (server-rendered,
  // escaped) and replace the old ones.
  function startRack() {
    var rows = document.querySelector("[data-rack-live]");
    if (!rows || !window.EventSource) { return; }
    var status = document.getElementById("live-status");
    var source = new EventSource(rows.getAttribute("data-rack-live"));
    source.addEventListener("open", function () {
      if (status) { status.textContent = "Live: the elevation updates as machines boot."; }
    });
    source.addEventListener("error", function () {
      if (status) { status.textContent = "Live updates paused; reconnecting…"; }
    });
    source.addEventListener("elevation", function (ev) { rows.innerHTML = ev.data; });
    source.addEventListener("picture", function (ev) {
      var picture = document.getElementById("picture");
      if (picture) { picture.innerHTML = ev.data; }
    });
    source.addEventListener("flags", function (ev) {
      var flags = document.getElementById("flags");
      if (flags) { flags.innerHTML = ev.data; }
    });
    window.addEventListener("pagehide", function () { source.close(); });
  }
  function startAll() { start(); startRack(); }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", startAll);
  } else {
    startAll();
  }
})();
