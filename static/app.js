// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";
  // Show timestamps in the viewer's time zone (the server renders UTC).
  function localizeTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when)) {
        el.textContent = when.toLocaleString();
        el.title = el.getAttribute("datetime");
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    localizeTimes(document);
    if (window.htmx) {
      // Let refusals (409, 422) reach the page: the server retargets them to #flash.
      htmx.config.responseHandling = [
        { code: "204", swap: false },
        { code: "[23]..", swap: true },
        { code: "(409|422|403)", swap: true, error: false },
        { code: "...", swap: false, error: true },
      ];
    }
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    localizeTimes(event.target);
  });
})();
