//! Work off the UI thread: one helper instead of a hand-made thread per feature. The
//! worker wakes the window when its answer is ready, so nothing polls by busy repainting.

use std::sync::mpsc::{Receiver, TryRecvError, channel};

use eframe::egui;

/// One piece of work on a worker thread.
pub struct Task<T> {
    rx: Receiver<T>,
}

impl<T: Send + 'static> Task<T> {
    /// Runs `work` on a new thread and requests a repaint when it is done.
    pub fn spawn(ctx: &egui::Context, work: impl FnOnce() -> T + Send + 'static) -> Self {
        let (tx, rx) = channel();
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            crate::job::priority::yield_to_window();
            let _ = tx.send(work());
            ctx.request_repaint();
        });
        Self { rx }
    }

    /// The answer, once; `None` while the work runs (or if the worker died).
    pub fn poll(&mut self) -> Option<T> {
        match self.rx.try_recv() {
            Ok(v) => Some(v),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => None,
        }
    }
}

/// A value recomputed off the UI thread whenever its request changes, newest request
/// first: while one computation runs, only the latest request waits behind it (typing
/// "0.25" into a field starts at most two computations, not four).
pub struct Latest<Q, T> {
    /// The request the current value answers.
    shown: Option<Q>,
    value: Option<T>,
    running: Option<(Q, Task<T>)>,
    waiting: Option<Q>,
}

impl<Q, T> Default for Latest<Q, T> {
    fn default() -> Self {
        Self {
            shown: None,
            value: None,
            running: None,
            waiting: None,
        }
    }
}

impl<Q: Clone + PartialEq + Send + 'static, T: Send + 'static> Latest<Q, T> {
    /// Asks for the value of `request`; computes it with `work` unless it is already
    /// shown, running or waiting.
    pub fn want(
        &mut self,
        ctx: &egui::Context,
        request: Q,
        work: impl Fn(Q) -> T + Send + Clone + 'static,
    ) {
        self.collect();
        let known = self.shown.as_ref() == Some(&request)
            || self.running.as_ref().is_some_and(|(q, _)| *q == request);
        if known {
            self.waiting = None;
        } else if self.running.is_none() {
            let (q, w) = (request.clone(), work.clone());
            self.running = Some((request, Task::spawn(ctx, move || w(q))));
        } else {
            self.waiting = Some(request);
        }
        if self.running.is_none() {
            if let Some(q) = self.waiting.take() {
                let q2 = q.clone();
                self.running = Some((q, Task::spawn(ctx, move || work(q2))));
            }
        }
    }

    /// Picks up a finished computation.
    fn collect(&mut self) {
        let done = match &mut self.running {
            Some((_, task)) => task.poll(),
            None => None,
        };
        if let Some(v) = done {
            if let Some((q, _)) = self.running.take() {
                self.shown = Some(q);
                self.value = Some(v);
            }
        }
    }

    /// The value of the newest finished request (it may lag the form by a frame or two).
    pub fn value(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// Whether the shown value answers `request` exactly.
    pub fn is_current(&self, request: &Q) -> bool {
        self.shown.as_ref() == Some(request)
    }

    /// Marks the value stale: the next `want` recomputes even an identical request (the
    /// ledger changed underneath it). The stale value stays readable, so what the window
    /// shows does not jump while the new one is computed.
    pub fn invalidate(&mut self) {
        self.shown = None;
        // An answer computed before the change would be stale: ignore it.
        self.running = None;
    }

    /// Forgets everything, stale value included (another dataset was opened).
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}
