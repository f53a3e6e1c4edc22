//! The request and response bodies, bounded: the request by the
//! request limit, the response by the response limit, the wait between
//! bytes, and the call's cancellation.

use super::{CallWatch, aborted};
use crate::ops::usage::Use;
use bytes::Bytes;
use http_body::{Body, Frame};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio_util::sync::WaitForCancellationFutureOwned;
use wasmtime_wasi_http::{Error as WasiHttpError, WasiBody};

/// Count a frame's data against `limit`: false once `counted` exceeds it.
pub(super) fn within(frame: &Frame<Bytes>, counted: &mut u64, limit: u64) -> bool {
    *counted += frame.data_ref().map_or(0, |data| data.len() as u64);
    *counted <= limit
}

/// What a body's `poll_frame` answers.
type Polled = Poll<Option<Result<Frame<Bytes>, WasiHttpError>>>;

/// The guest's request body, failed once it exceeds the request limit.
pub(super) struct Limited {
    pub(super) inner: WasiBody,
    pub(super) sent: u64,
    pub(super) limit: u64,
}

impl Body for Limited {
    type Data = Bytes;
    type Error = WasiHttpError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) if !within(&frame, &mut this.sent, this.limit) => {
                Poll::Ready(Some(Err(WasiHttpError::HttpRequestBodySize(Some(
                    this.limit,
                )))))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

/// The response body as the guest reads it: failed once it exceeds the
/// response limit, when no byte arrives within the between-bytes timeout,
/// and when the call is cancelled.
pub(super) struct Incoming {
    pub(super) inner: hyper::body::Incoming,
    pub(super) read: u64,
    pub(super) limit: u64,
    pub(super) idle: Duration,
    pub(super) timer: Pin<Box<tokio::time::Sleep>>,
    pub(super) cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    pub(super) url: String,
    pub(super) signals: Arc<dyn CallWatch>,
    pub(super) done: bool,
    /// Replaces the extension's secrets in what the body carries.
    pub(super) redactor: Option<super::secrets::Redactor>,
}

impl Body for Incoming {
    type Data = Bytes;
    type Error = WasiHttpError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.cancelled.as_mut().poll(cx).is_ready() {
            this.done = true;
            return Poll::Ready(Some(Err(aborted(&this.url))));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) if !within(&frame, &mut this.read, this.limit) => {
                this.done = true;
                let url = &this.url;
                let denied = format!("http {url}: response-too-large");
                this.signals.usage().note(Use::Denied, &denied);
                Poll::Ready(Some(Err(WasiHttpError::HttpResponseBodySize(Some(
                    this.limit,
                )))))
            }
            Poll::Ready(Some(Ok(frame))) => {
                let next = tokio::time::Instant::now() + this.idle;
                this.timer.as_mut().reset(next);
                let frame = match (&mut this.redactor, frame.into_data()) {
                    (Some(redactor), Ok(data)) => Frame::data(Bytes::from(redactor.push(&data))),
                    (_, Ok(data)) => Frame::data(data),
                    // Trailers are headers too.
                    (Some(redactor), Err(frame)) => match frame.into_trailers() {
                        Ok(mut trailers) => {
                            redactor.headers(&mut trailers);
                            Frame::trailers(trailers)
                        }
                        Err(frame) => frame,
                    },
                    (None, Err(frame)) => frame,
                };
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                Poll::Ready(Some(Err(if e.is_timeout() {
                    WasiHttpError::HttpResponseTimeout
                } else {
                    WasiHttpError::Hyper(e)
                })))
            }
            Poll::Ready(None) => {
                this.done = true;
                match this.redactor.as_mut().map(|r| r.finish()) {
                    Some(held) if !held.is_empty() => {
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(held)))))
                    }
                    _ => Poll::Ready(None),
                }
            }
            Poll::Pending => {
                if this.timer.as_mut().poll(cx).is_ready() {
                    this.done = true;
                    return Poll::Ready(Some(Err(WasiHttpError::ConnectionReadTimeout)));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }
}
