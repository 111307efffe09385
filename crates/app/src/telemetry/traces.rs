//! Traces: OpenTelemetry spans, exported over OTLP (HTTP, protobuf) when an endpoint is
//! configured (`OTEL_EXPORTER_OTLP_ENDPOINT`, see [`TraceSettings`]).
//!
//! The spans: one per request (`POST /v1.0/messages/{modified_message_name}`), continuing the
//! caller's `traceparent`; one per engine step (`engine step`, with the instance, its model and
//! the message it delivers); one per commit; and for a service task, `connector job` (the
//! dispatcher's run, continuing the trace of the step that scheduled it, whose `traceparent` is
//! kept with the job) with `connector call` around the proxy's answer (the proxy receives its
//! `traceparent`).
//!
//! The tracer a span goes to travels in the OpenTelemetry context with the work (the request
//! middleware and the dispatcher put it there), not in a global: two applications in one
//! process (tests) export to their own collectors. Without it, tracing is off and every
//! function here returns after one thread-local lookup: no span, no attribute is built.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Display;
use std::future::Future;

use anyhow::Context as _;
use futures_util::future::Either;
use opentelemetry::context::FutureExt as _;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{Status, TraceContextExt as _, Tracer as _, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use crate::config::TraceSettings;

pub use opentelemetry::trace::SpanKind;
use opentelemetry::Context;
pub use opentelemetry::KeyValue;

/// This application's exporter and tracer.
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

/// In a context: the tracer its spans go to. Absent: tracing is off for that work.
#[derive(Clone)]
struct Active(SdkTracer);

impl Traces {
    /// Builds the OTLP exporter behind a batching processor: spans are queued and leave on
    /// the SDK's own thread, never on a request's (a slow or absent collector costs requests
    /// nothing; when the queue is full, spans are dropped, not waited for).
    pub fn start(settings: &TraceSettings) -> anyhow::Result<Traces> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(settings.endpoint.clone())
            .build()
            .context("cannot build the OTLP span exporter")?;
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("workflow-backend");
        Ok(Traces { provider, tracer })
    }

    /// The context of work that continues the trace of `traceparent` (and `tracestate`): a
    /// request's headers, a job's stored parent; a new trace when absent or malformed. Spans
    /// made under it go to this application's exporter.
    pub fn continue_trace(&self, traceparent: Option<&str>, tracestate: Option<&str>) -> Context {
        let carrier: HashMap<String, String> =
            [("traceparent", traceparent), ("tracestate", tracestate)]
                .into_iter()
                .filter_map(|(name, value)| Some((name.to_string(), value?.to_string())))
                .collect();
        TraceContextPropagator::new()
            .extract(&carrier)
            .with_value(Active(self.tracer.clone()))
    }

    /// Exports every span that has ended. Blocks until the collector answered: call it off
    /// the async threads (tests do, to read what was exported without waiting for a batch).
    pub fn flush(&self) -> anyhow::Result<()> {
        self.provider
            .force_flush()
            .map_err(|e| anyhow::anyhow!("cannot export spans: {e}"))
    }

    /// Exports what is left and stops the exporter (blocking, as [`Traces::flush`]).
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "traces: the last spans could not be exported");
        }
    }
}

/// A span while it lives (ended when dropped), or nothing when tracing is off.
#[must_use = "a span ends when dropped"]
pub struct SpanScope(Option<Context>);

impl SpanScope {
    /// A span under `parent`'s span (or starting a trace), when `parent` carries a tracer.
    pub fn under(
        parent: &Context,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> SpanScope {
        let Some(Active(tracer)) = parent.get::<Active>() else {
            return SpanScope(None);
        };
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(tracer, parent);
        SpanScope(Some(parent.with_span(span)))
    }

    /// A span of work that starts outside any request (a connector job, a timer firing):
    /// under `traceparent` when the work kept one, else the first span of a new trace. Nothing
    /// when traces are off (`traces` is `None`).
    pub fn start(
        traces: Option<&Traces>,
        traceparent: Option<&str>,
        name: &'static str,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> SpanScope {
        match traces {
            Some(traces) => SpanScope::under(
                &traces.continue_trace(traceparent, None),
                name,
                SpanKind::Internal,
                attributes,
            ),
            None => SpanScope(None),
        }
    }

    /// A span under the current one, when the work is traced.
    pub fn child(
        name: &'static str,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> SpanScope {
        match traced_current() {
            Some(parent) => SpanScope::under(&parent, name, kind, attributes),
            None => SpanScope(None),
        }
    }

    /// Adds attributes (the closure runs only when the span records).
    pub fn set(&self, attributes: impl FnOnce() -> Vec<KeyValue>) {
        if let Some(cx) = &self.0 {
            cx.span().set_attributes(attributes());
        }
    }

    /// Marks the span failed, with why.
    pub fn fail(&self, description: impl FnOnce() -> String) {
        if let Some(cx) = &self.0 {
            cx.span().set_status(Status::error(description()));
        }
    }

    /// Passes `result` through, marking the span failed when it is an error.
    pub fn record<T, E: Display>(&self, result: Result<T, E>) -> Result<T, E> {
        if let Err(e) = &result {
            self.fail(|| e.to_string());
        }
        result
    }

    /// Runs `work` with this span current: the spans it makes are its children, and requests
    /// it makes carry its `traceparent`.
    pub fn around<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        within(self.0.as_ref(), work)
    }
}

impl Drop for SpanScope {
    fn drop(&mut self) {
        if let Some(cx) = &self.0 {
            cx.span().end();
        }
    }
}

/// The current context when the work is traced (it carries a tracer).
fn traced_current() -> Option<Context> {
    Context::map_current(|cx| cx.get::<Active>().is_some().then(|| cx.clone()))
}

/// `work` run in `cx`, when there is one.
fn within<F: Future>(cx: Option<&Context>, work: F) -> impl Future<Output = F::Output> {
    match cx {
        Some(cx) => Either::Left(work.with_context(cx.clone())),
        None => Either::Right(work),
    }
}

/// The current trace context, carried to work another task does for this one (a message
/// committed in a batch): its spans go under this one's span. Nothing when not traced.
#[derive(Clone, Default)]
pub struct Carried(Option<Context>);

impl Carried {
    pub fn current() -> Carried {
        Carried(traced_current())
    }

    /// Runs `work` in the carried context.
    pub fn around<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        within(self.0.as_ref(), work)
    }
}

/// Adds attributes to the current span (a request's, say, once its handler knows the message
/// name), when the work is traced.
pub fn annotate_current(attributes: impl FnOnce() -> Vec<KeyValue>) {
    let current = traced_current();
    if let Some(cx) = current {
        cx.span().set_attributes(attributes());
    }
}

/// `traceparent` (and `tracestate`) of the current span, for a request to another service or
/// for work that continues later (a connector job); empty when the work is not traced.
pub fn outgoing_headers() -> Vec<(String, String)> {
    let current = traced_current();
    let Some(cx) = current else {
        return Vec::new();
    };
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.into_iter().collect()
}

/// The current span's `traceparent`, when the work is traced.
pub fn current_traceparent() -> Option<String> {
    outgoing_headers()
        .into_iter()
        .find_map(|(name, value)| (name == "traceparent").then_some(value))
}
