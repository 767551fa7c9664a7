// /docs: starts the vendored Swagger UI on the OpenAPI document the page names (no inline script: the CSP
// allows only /static).
(function () {
  "use strict";
  const el = document.getElementById("swagger-ui");
  if (!el || typeof SwaggerUIBundle === "undefined") return;
  const parameters = JSON.parse(el.dataset.parameters || "{}");
  window.ui = SwaggerUIBundle(Object.assign({}, parameters, {
    url: el.dataset.openapiUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
  }));
})();
