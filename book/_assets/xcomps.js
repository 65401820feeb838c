// xcomps-study book: a table wider than the text column says so (a hint above it, a fade on the
// side that hides columns) and scrolls sideways; see xcomps.css. No effect on tables that fit.
(function () {
  function mark(table) {
    var wrap = table.parentElement;
    if (!wrap.classList.contains("xcomps-scroll-wrap")) {
      wrap = document.createElement("div");
      wrap.className = "xcomps-scroll-wrap";
      table.parentElement.insertBefore(wrap, table);
      var hint = document.createElement("div");
      hint.className = "xcomps-scroll-hint";
      hint.textContent = "\u21c6 wider than the page: scroll sideways for the other columns";
      wrap.appendChild(hint);
      wrap.appendChild(table);
      table.addEventListener("scroll", function () { update(table); }, { passive: true });
    }
    update(table);
  }
  function update(table) {
    var wrap = table.parentElement;
    var scrolls = table.scrollWidth > table.clientWidth + 1;
    wrap.classList.toggle("xcomps-scrolls", scrolls);
    wrap.classList.toggle("xcomps-more-right",
      scrolls && table.scrollLeft + table.clientWidth < table.scrollWidth - 1);
  }
  function all() {
    document.querySelectorAll("div.cell_output table, article table").forEach(mark);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", all);
  } else {
    all();
  }
  window.addEventListener("resize", all);
})();
