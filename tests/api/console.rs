//! The web console's files, served by the service itself (the pages are tested in a browser by
//! tests/browser/console_test.py, which CI runs).

use crate::helpers::spawn_app;
use reqwest::StatusCode;

#[tokio::test]
async fn the_console_pages_and_assets_are_served_from_the_binary() {
    let app = spawn_app().await;
    for page in [
        "/console/",
        "/console/messages",
        "/console/instances/42",
        "/console/models/finance:v1.2/",
    ] {
        let response = app.client.get(app.url(page)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{page}");
        let headers = response.headers().clone();
        assert_eq!(
            headers["content-type"], "text/html; charset=utf-8",
            "{page}"
        );
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        let body = response.text().await.unwrap();
        assert!(body.contains("/console/app.js"), "{page}: {body}");
        assert!(
            !body.contains("<script>"),
            "no inline script: the CSP forbids it"
        );
    }
    let viewer = app
        .client
        .get(app.url("/console/vendor/bpmn-js/bpmn-navigated-viewer.production.min.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(viewer.status(), StatusCode::OK);
    assert_eq!(
        viewer.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let licence = app
        .client
        .get(app.url("/console/vendor/bpmn-js/LICENSE"))
        .send()
        .await
        .unwrap();
    assert_eq!(licence.status(), StatusCode::OK);

    // a missing asset is a 404 problem, not the page
    let missing = app
        .client
        .get(app.url("/console/missing.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        missing.headers()["content-type"],
        "application/problem+json"
    );
    // /console redirects to the console
    let redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(app.url("/console"))
        .send()
        .await
        .unwrap();
    assert!(redirect.status().is_redirection());
    assert_eq!(redirect.headers()["location"], "/console/");
}
