// The web UI's only script, served from /static/ so that the Content-Security-Policy can forbid
// every inline one. Loaded with `defer`: it runs once the page is parsed.

// Any script error on a page is recorded on <html>; the browser tests read it.
window.addEventListener("error", function (event) {
  document.documentElement.setAttribute("data-script-error", String(event.message));
});

// Times are shown in UTC; the reader's local time is the tooltip.
for (const cell of document.querySelectorAll("time[datetime]")) {
  cell.title = new Date(cell.getAttribute("datetime")).toLocaleString();
}
document.body.setAttribute("data-ready", "yes");
