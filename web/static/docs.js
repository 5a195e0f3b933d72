// Starts Swagger UI on /docs over the server's OpenAPI document. Its files come from the
// swagger-ui-py package, served by this server, so the page works with no internet.
window.addEventListener("DOMContentLoaded", () => {
  window.ui = window.SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true });
});
