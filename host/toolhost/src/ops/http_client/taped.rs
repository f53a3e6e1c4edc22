//! A request of a call that records or replays (`crate::tape`, which
//! implements [`HttpTape`] from above the Operations): the exchange as the
//! guest saw it, kept whole, so that a replay answers the same request with
//! the same response without sending it.
//!
//! Recording, the guest's request (its headers and body as it wrote them,
//! before the host adds a secret) goes out through the policy as any other
//! does; its response is read to its end (within the same limits, waits
//! and cancellation) with the extension's secrets already redacted, kept,
//! and given to the guest from what was kept. Replaying, the grant is
//! checked again and the kept response is the answer. Either way the guest
//! sees the same bytes, the same status and headers, and a failure as the
//! same `wasi:http` error code.

use super::{CallWatch, HttpPolicy, MAX_REQUEST_BYTES, Target, internal};
use crate::ops::usage::Use;
use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use wasmtime_wasi_http::{Error as WasiHttpError, WasiBody};

/// A request as the guest made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    pub method: String,
    pub url: String,
    pub headers: Vec<Field>,
    pub body: Vec<u8>,
}

/// A header or trailer: its name, and its value's bytes (text where they
/// are UTF-8, as most are; else base64).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field(pub String, pub FieldValue);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    Text(String),
    Bytes { base64: String },
}

impl FieldValue {
    fn of(bytes: &[u8]) -> FieldValue {
        match std::str::from_utf8(bytes) {
            Ok(text) => FieldValue::Text(text.to_string()),
            Err(_) => {
                use base64::Engine;
                FieldValue::Bytes {
                    base64: base64::engine::general_purpose::STANDARD.encode(bytes),
                }
            }
        }
    }

    fn bytes(&self) -> Vec<u8> {
        match self {
            FieldValue::Text(text) => text.as_bytes().to_vec(),
            FieldValue::Bytes { base64 } => {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD
                    .decode(base64)
                    .unwrap_or_default()
            }
        }
    }
}

fn fields(map: &http::HeaderMap) -> Vec<Field> {
    map.iter()
        .map(|(name, value)| Field(name.as_str().to_string(), FieldValue::of(value.as_bytes())))
        .collect()
}

fn header_map(fields: &[Field]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for Field(name, value) in fields {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_bytes(&value.bytes()),
        ) {
            map.append(name, value);
        }
    }
    map
}

/// What a request got: a response, or the failure the guest saw.
pub type Answered = Result<Received, Failure>;

/// A response as the guest read it: its body whole (or as far as it came,
/// then `failed`), its trailers, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub status: u16,
    pub headers: Vec<Field>,
    pub body: Vec<u8>,
    pub trailers: Option<Vec<Field>>,
    pub failed: Option<Failure>,
}

/// A `wasi:http` failure as the guest sees it (the error code its
/// `future-incoming-response` or body stream gives).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    Internal(Option<String>),
    Dns {
        rcode: Option<String>,
        info_code: Option<u16>,
    },
    RequestBodySize(Option<u64>),
    ResponseBodySize(Option<u64>),
    /// An error code without a payload, by its name.
    Code(Code),
}

macro_rules! codes {
    ($($name:ident),* $(,)?) => {
        /// The `wasi:http` error codes without a payload this host gives.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Code { $($name),* }

        impl Code {
            fn of(e: &WasiHttpError) -> Option<Code> {
                match e {
                    $(WasiHttpError::$name => Some(Code::$name),)*
                    _ => None,
                }
            }

            fn error(self) -> WasiHttpError {
                match self { $(Code::$name => WasiHttpError::$name),* }
            }
        }
    };
}

codes!(
    DnsTimeout,
    DestinationNotFound,
    DestinationUnavailable,
    DestinationIpProhibited,
    DestinationIpUnroutable,
    ConnectionRefused,
    ConnectionTerminated,
    ConnectionTimeout,
    ConnectionReadTimeout,
    ConnectionWriteTimeout,
    ConnectionLimitReached,
    TlsProtocolError,
    TlsCertificateError,
    HttpRequestDenied,
    HttpRequestLengthRequired,
    HttpRequestMethodInvalid,
    HttpRequestUriInvalid,
    HttpRequestUriTooLong,
    HttpResponseIncomplete,
    HttpResponseTimeout,
    HttpUpgradeFailed,
    HttpProtocolError,
    LoopDetected,
    ConfigurationError,
);

impl Failure {
    /// `e` as the guest sees it: `wasmtime-wasi-http`'s own mapping of a
    /// connection, TLS or hyper error (with the hooks' defaults this host
    /// keeps), the rest as they are.
    pub fn of(e: &WasiHttpError) -> Failure {
        let unnamed = || Failure::Internal(Some(e.to_string()));
        match e {
            WasiHttpError::InternalError(text) => Failure::Internal(text.clone()),
            WasiHttpError::DnsError { rcode, info_code } => Failure::Dns {
                rcode: rcode.clone(),
                info_code: *info_code,
            },
            WasiHttpError::HttpRequestBodySize(n) => Failure::RequestBodySize(*n),
            WasiHttpError::HttpResponseBodySize(n) => Failure::ResponseBodySize(*n),
            WasiHttpError::Connect(io) => {
                let lookup = io.kind() == std::io::ErrorKind::AddrNotAvailable
                    || io
                        .to_string()
                        .starts_with("failed to lookup address information");
                if lookup {
                    Failure::Dns {
                        rcode: Some("address not available".into()),
                        info_code: None,
                    }
                } else {
                    Failure::Code(Code::ConnectionRefused)
                }
            }
            WasiHttpError::Tls(_) => Failure::Code(Code::TlsProtocolError),
            WasiHttpError::Hyper(hyper) => {
                let mut cause = std::error::Error::source(hyper);
                while let Some(c) = cause {
                    if let Some(code) =
                        c.downcast_ref::<wasmtime_wasi_http::p2::bindings::http::types::ErrorCode>()
                    {
                        return Failure::of(&WasiHttpError::from(code.clone()));
                    }
                    if let Some(inner) = c.downcast_ref::<WasiHttpError>() {
                        return Failure::of(inner);
                    }
                    cause = c.source();
                }
                Failure::Code(if hyper.is_timeout() {
                    Code::HttpResponseTimeout
                } else {
                    Code::HttpProtocolError
                })
            }
            e => Code::of(e).map_or_else(unnamed, Failure::Code),
        }
    }

    pub fn error(&self) -> WasiHttpError {
        match self {
            Failure::Internal(text) => WasiHttpError::InternalError(text.clone()),
            Failure::Dns { rcode, info_code } => WasiHttpError::DnsError {
                rcode: rcode.clone(),
                info_code: *info_code,
            },
            Failure::RequestBodySize(n) => WasiHttpError::HttpRequestBodySize(*n),
            Failure::ResponseBodySize(n) => WasiHttpError::HttpResponseBodySize(*n),
            Failure::Code(code) => code.error(),
        }
    }
}

/// A call's tape, as a request sees it.
pub trait HttpTape: Send + Sync {
    /// The request `sent` is asked on the tape. Replaying: the recorded
    /// answer, or the divergence that ends the call. Recording: where its
    /// answer goes, once it has one.
    fn ask(self: Arc<Self>, sent: &Sent) -> OnTape;
    /// The request `sent` is one its grant does not allow now, and the
    /// recording has it answered: the divergence, said.
    fn not_allowed(&self, sent: &Sent) -> String;
}

pub enum OnTape {
    Replayed(Result<Answered, String>),
    Recording(Box<dyn FnOnce(&Answered) + Send>),
}

type Sending = Result<(http::Response<WasiBody>, super::IoFuture), WasiHttpError>;

/// Send `request` on `tape` (see the module docs): `live` sends a request
/// as an unrecorded call would.
pub(super) async fn send<F>(
    tape: Arc<dyn HttpTape>,
    policy: Option<Arc<HttpPolicy>>,
    signals: &Arc<dyn CallWatch>,
    request: http::Request<WasiBody>,
    live: impl FnOnce(http::Request<WasiBody>) -> F,
) -> Sending
where
    F: std::future::Future<Output = Sending>,
{
    let limit = policy
        .as_ref()
        .map_or(MAX_REQUEST_BYTES, |p| p.request_bytes);
    let (parts, body) = request.into_parts();
    let body = super::Limited {
        inner: body,
        sent: 0,
        limit,
    }
    .collect()
    .await?
    .to_bytes();
    let sent = Sent {
        method: parts.method.to_string(),
        url: parts.uri.to_string(),
        headers: fields(&parts.headers),
        body: body.to_vec(),
    };
    let record = match tape.clone().ask(&sent) {
        OnTape::Replayed(Err(diverged)) => return Err(internal(diverged)),
        OnTape::Replayed(Ok(answered)) => {
            let target = Target::of(&parts.uri).ok();
            let grant = policy.as_ref().zip(target.as_ref());
            let allowed = grant.and_then(|(policy, target)| policy.grant_for(target));
            if let (None, Ok(_)) = (allowed, &answered) {
                return Err(internal(tape.not_allowed(&sent)));
            }
            if let (Some(target), Ok(_)) = (&target, &answered) {
                signals.usage().note(Use::Host, &target.as_entry());
            }
            return answer(&answered);
        }
        OnTape::Recording(record) => record,
    };
    let request = http::Request::from_parts(parts, whole(body));
    let answered = match live(request).await {
        Ok((response, io)) => Ok(read_whole(response, io).await),
        Err(e) => Err(Failure::of(&e)),
    };
    record(&answered);
    answer(&answered)
}

/// `bytes` as a body.
fn whole(bytes: Bytes) -> WasiBody {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// `response` read to its end while `io` drives its connection.
async fn read_whole(response: http::Response<WasiBody>, io: super::IoFuture) -> Received {
    let (parts, mut body) = response.into_parts();
    let mut received = Received {
        status: parts.status.as_u16(),
        headers: fields(&parts.headers),
        body: Vec::new(),
        trailers: None,
        failed: None,
    };
    let mut io = Box::into_pin(io);
    let mut io_done = false;
    loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            // The connection's own end says nothing the body does not.
            _ = &mut io, if !io_done => {
                io_done = true;
                continue;
            }
        };
        match frame {
            None => break,
            Some(Err(e)) => {
                received.failed = Some(Failure::of(&e));
                break;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => received.body.extend_from_slice(&data),
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        received.trailers = Some(fields(&trailers));
                    }
                }
            },
        }
    }
    received
}

/// The response (or failure) `answered` gives the guest.
fn answer(answered: &Answered) -> Sending {
    let received = answered.as_ref().map_err(Failure::error)?;
    let mut frames: Vec<Result<Frame<Bytes>, WasiHttpError>> = Vec::new();
    if !received.body.is_empty() {
        frames.push(Ok(Frame::data(Bytes::from(received.body.clone()))));
    }
    if let Some(trailers) = &received.trailers {
        frames.push(Ok(Frame::trailers(header_map(trailers))));
    }
    if let Some(failed) = &received.failed {
        frames.push(Err(failed.error()));
    }
    let body = StreamBody::new(futures::stream::iter(frames)).boxed_unsync();
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::from_u16(received.status).map_err(|_| {
        internal(format!(
            "the recorded status {} is not one",
            received.status
        ))
    })?;
    *response.headers_mut() = header_map(&received.headers);
    let io: super::IoFuture = Box::new(async { Ok(()) });
    Ok((response, io))
}
