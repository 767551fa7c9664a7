// Small behaviours shared by the pages. No inline scripts anywhere: the CSP allows only /static.
(function () {
  "use strict";
  // Filter forms submit as soon as a select changes; the Apply button stays for text and no-JS use.
  for (const form of document.querySelectorAll("form[data-autosubmit]")) {
    for (const select of form.querySelectorAll("select")) {
      select.addEventListener("change", () => form.requestSubmit ? form.requestSubmit() : form.submit());
    }
  }
})();

// Alerts page: acknowledge / dismiss through the token-protected API. The token lives in sessionStorage.
(function () {
  "use strict";
  const table = document.getElementById("live-alerts");
  const input = document.getElementById("api-token");
  if (!table || !input) return;
  const flash = document.getElementById("alert-flash");
  const state = document.getElementById("token-state");
  const KEY = "tewatch.api-token";
  input.value = sessionStorage.getItem(KEY) || "";
  const showState = () => { state.textContent = input.value ? "token set for this tab" : "no token"; };
  showState();
  input.addEventListener("input", () => { sessionStorage.setItem(KEY, input.value.trim()); showState(); });
  document.getElementById("token-forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY); input.value = ""; showState();
  });

  function say(ok, text) {
    flash.className = "flash show " + (ok ? "ok" : "err");
    flash.textContent = text;
  }

  table.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const row = button.closest("tr[data-alert-id]");
    const id = row.dataset.alertId, action = button.dataset.action;
    const token = input.value.trim();
    if (!token) { say(false, "Paste a triage token first (tewatch token create --scope triage)."); input.focus(); return; }
    const url = table.dataset.actionUrl.replace("{id}", encodeURIComponent(id));
    const wanted = action === "acknowledge" ? "acknowledged" : "dismissed";
    button.disabled = true;
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json", "Accept": "application/json" },
        body: JSON.stringify({ status: wanted, actor: "dashboard" }),
      });
      let body = null;
      try { body = await response.json(); } catch (e) { body = null; }
      if (!response.ok) {
        const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : response.statusText;
        say(false, "Alert " + id + ": " + response.status + " " + detail);
        button.disabled = false;
        return;
      }
      const status = (body && body.status) || wanted;
      const badge = row.querySelector("[data-role=status]");
      badge.textContent = status;
      badge.className = "badge " + (status === "acknowledged" ? "st-regression" : "st-neutral");
      if (status === "dismissed") row.classList.add("greyed");
      for (const b of row.querySelectorAll("button[data-action]")) {
        if (status === "dismissed" || b.dataset.action === "acknowledge") b.remove();
      }
      say(true, "Alert " + id + " " + status + ".");
    } catch (err) {
      say(false, "Alert " + id + ": " + err.message);
      button.disabled = false;
    }
  });
})();
