// Every page: a form marked data-confirm asks first; an htmx request the server could not answer (5xx, or no
// answer at all) says so in the banner under the header, since nothing would be swapped in.
(function () {
  document.addEventListener("submit", (event) => {
    const question = event.target.dataset && event.target.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  }, true);

  function banner(text) {
    const box = document.getElementById("request-error");
    if (!box) return;
    box.textContent = text;
    box.hidden = false;
  }
  document.addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.successful || event.detail.xhr.status < 500) {
      const box = document.getElementById("request-error");
      if (box && event.detail.successful) box.hidden = true;
      return;
    }
    banner("The studio could not handle that request (HTTP " + event.detail.xhr.status + "). Try again; if it " +
           "keeps failing, an operator will find the reason in the web server's log.");
  });
  document.addEventListener("htmx:sendError", () => {
    banner("The studio did not answer: check your connection, then try again.");
  });
})();
