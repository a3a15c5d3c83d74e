//! Traces: seal's `tracing` spans as OpenTelemetry spans (an `http.request` → `roll` → `judge`
//! → `judge.attempt` tree for each roll), the W3C trace context taken from a worker's
//! `traceparent` and sent on to the judges, and their export over OTLP/HTTP (protobuf).
//!
//! The OpenTelemetry layer is always installed; the exporter only when an endpoint is configured
//! (`[telemetry] otlp_endpoint`, else `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and neither `OTEL_SDK_DISABLED=true` nor
//! `OTEL_TRACES_EXPORTER=none` is set. It posts from the SDK's own batch thread, never from a
//! request's task (docs/DECISIONS.md, "Traces are always made, exported only on request").

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{LevelFilter, Targets};

/// The `service.name` of the exported spans, unless `OTEL_SERVICE_NAME` says otherwise.
const SERVICE_NAME: &str = "seal";

/// The spans that become OpenTelemetry spans: seal's own, at info and above (whatever
/// `SEAL_LOG` lets through to the log).
pub fn span_filter() -> Targets {
    Targets::new()
        .with_target("seal", LevelFilter::INFO)
        .with_target("seal_engine", LevelFilter::INFO)
        .with_target("seal_server", LevelFilter::INFO)
}

/// Where traces are exported, if anywhere: `configured` (the config's base URL, traces under
/// `/v1/traces`) or the standard environment variables (read by the exporter itself).
pub fn export_target(
    configured: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Target> {
    let set = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return None;
    }
    if let Some(base) = configured {
        return Some(Target::Url(format!(
            "{}/v1/traces",
            base.trim_end_matches('/')
        )));
    }
    (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
        || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some())
    .then_some(Target::Environment)
}

/// Where the exporter posts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This full URL (from the configuration).
    Url(String),
    /// As the `OTEL_EXPORTER_OTLP_*` variables say.
    Environment,
}

/// The tracer provider of this process; [`Traces::shutdown`] flushes what is batched.
pub struct Traces {
    provider: SdkTracerProvider,
    pub exporting: bool,
}

impl Traces {
    /// A provider exporting to `target` (none: spans are made, so trace context propagates,
    /// and dropped). An exporter that cannot be built is logged once and left out: traces
    /// are an aid, never a reason not to start.
    pub fn new(target: Option<&Target>) -> (Traces, Option<String>) {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(
                std::env::var("OTEL_SERVICE_NAME")
                    .ok()
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| SERVICE_NAME.to_string()),
            )
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let mut builder = SdkTracerProvider::builder().with_resource(resource);
        let mut problem = None;
        let mut exporting = false;
        if let Some(target) = target {
            let mut exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
            if let Target::Url(url) = target {
                exporter = exporter.with_endpoint(url.clone());
            }
            match exporter.build() {
                Ok(e) => {
                    builder = builder.with_batch_exporter(e);
                    exporting = true;
                }
                Err(e) => problem = Some(format!("traces are not exported: {e}")),
            }
        }
        let provider = builder.build();
        (
            Traces {
                provider,
                exporting,
            },
            problem,
        )
    }

    /// The layer turning `tracing` spans into OpenTelemetry spans.
    pub fn layer<S>(
        &self,
    ) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer("seal"))
    }

    /// Exports what is batched and stops the exporter (at exit).
    pub fn shutdown(self) {
        if self.exporting {
            if let Err(e) = self.provider.shutdown() {
                eprintln!("seal: traces: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_is_off_unless_an_endpoint_is_given() {
        let none = |_: &str| None;
        assert_eq!(export_target(None, &none), None);
        assert_eq!(
            export_target(Some("http://collector:4318/"), &none),
            Some(Target::Url("http://collector:4318/v1/traces".into()))
        );
        let env = |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://c:4318".into());
        assert_eq!(export_target(None, &env), Some(Target::Environment));
        let disabled = |k: &str| match k {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://c:4318".into()),
            "OTEL_SDK_DISABLED" => Some("true".into()),
            _ => None,
        };
        assert_eq!(export_target(Some("http://x:1"), &disabled), None);
    }
}
