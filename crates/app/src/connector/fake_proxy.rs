//! Test helper: a real HTTP fake connector proxy on 127.0.0.1 (actix-web), answering every
//! request from a scripted queue and recording what it received.
//!
//! ```ignore
//! let proxy = FakeProxy::start().await;
//! proxy.push(Scripted::json(200, r#"{"command_response": {}}"#.into()));
//! // ... point a client at proxy.base_url ...
//! let received = proxy.requests();
//! ```
//!
//! When the queue is empty the fake answers 500 with a text body. The server stops when the
//! `FakeProxy` is dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};

/// One request as received by the fake.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// First value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Sleep this long before answering (for timeout tests).
    pub delay: Option<Duration>,
}

impl Scripted {
    pub fn json(status: u16, body: String) -> Self {
        Scripted {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body,
            delay: None,
        }
    }

    pub fn text(status: u16, body: &str) -> Self {
        Scripted {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into(),
            delay: None,
        }
    }

    pub fn redirect(status: u16, location: &str) -> Self {
        Scripted {
            status,
            headers: vec![("location".into(), location.into())],
            body: String::new(),
            delay: None,
        }
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Scripted>,
    received: Vec<Recorded>,
}

/// A running fake proxy.
pub struct FakeProxy {
    /// `http://127.0.0.1:<port>` (no trailing slash).
    pub base_url: String,
    state: Arc<Mutex<State>>,
    handle: ServerHandle,
}

async fn answer(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<Arc<Mutex<State>>>,
) -> HttpResponse {
    let scripted = {
        let mut state = state.lock().unwrap();
        state.received.push(Recorded {
            method: req.method().to_string(),
            path: req
                .uri()
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            headers: req
                .headers()
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: body.to_vec(),
        });
        state.script.pop_front()
    };
    let Some(scripted) = scripted else {
        return HttpResponse::InternalServerError().body("fake proxy: no scripted response");
    };
    if let Some(delay) = scripted.delay {
        tokio::time::sleep(delay).await;
    }
    let status = actix_web::http::StatusCode::from_u16(scripted.status).expect("valid status");
    let mut response = HttpResponse::build(status);
    for (name, value) in &scripted.headers {
        response.insert_header((name.as_str(), value.as_str()));
    }
    response.body(scripted.body)
}

impl FakeProxy {
    pub async fn start() -> FakeProxy {
        let state = Arc::new(Mutex::new(State::default()));
        let data = web::Data::new(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(web::to(answer))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(0)
        .bind(("127.0.0.1", 0))
        .expect("bind fake proxy");
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        tokio::spawn(server);
        FakeProxy {
            base_url: format!("http://{addr}"),
            state,
            handle,
        }
    }

    /// Appends an answer to the queue.
    pub fn push(&self, scripted: Scripted) {
        self.state.lock().unwrap().script.push_back(scripted);
    }

    /// Everything received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().received.clone()
    }
}

impl Drop for FakeProxy {
    fn drop(&mut self) {
        // Not awaited: stopping is asynchronous and the test runtime may be gone.
        drop(self.handle.stop(false));
    }
}
