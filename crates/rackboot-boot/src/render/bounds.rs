//! Every operator template renders within bounds: a fuel of template steps (minijinja counts one
//! per instruction, so a nest of loops stops after [`FUEL`] of them, whatever each `range`
//! allows) and an output of at most [`MAX_OUTPUT`] bytes (a step can print a whole list). A
//! template past either is refused when it is saved and never reaches a boot.

use std::io;

use minijinja::{ErrorKind, Template, Value};

use super::{RenderError, Renderer};

/// Template steps one render may take. Every shipped template renders its unit tests' machines
/// in under 500 (checked by setting this to 500); a nest of loops spends all of it in well
/// under 100 ms even in a debug build (`render::tests::fuel_is_spent_quickly_and_refused`).
pub const FUEL: u64 = 200_000;

/// Bytes one render may write; the largest shipped output (the identity script, with the
/// agent's unit and the CA) is a few KiB.
pub const MAX_OUTPUT: usize = 1 << 20;

/// A buffer that refuses to grow past [`MAX_OUTPUT`].
struct Capped {
    buf: Vec<u8>,
    over: bool,
}

impl io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.buf.len() + b.len() > MAX_OUTPUT {
            self.over = true;
            return Err(io::Error::other("the template's output is too large"));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn bounded(t: &Template<'_, '_>, ctx: Value) -> Result<String, RenderError> {
    let mut out = Capped { buf: Vec::new(), over: false };
    match t.render_captured_to(ctx, &mut out) {
        Ok(_) => Ok(String::from_utf8(out.buf).expect("templates write UTF-8")),
        Err(_) if out.over => Err(RenderError::TooLarge(MAX_OUTPUT)),
        Err(e) if e.kind() == ErrorKind::OutOfFuel => Err(RenderError::OutOfFuel(FUEL)),
        Err(e) => Err(e.into()),
    }
}

impl Renderer {
    /// Template `name` rendered with `ctx`, within the bounds.
    pub(super) fn render(&self, name: &str, ctx: Value) -> Result<String, RenderError> {
        bounded(&self.env.get_template(name)?, ctx)
    }

    /// `source` (a profile's command line) rendered with `ctx`, within the bounds.
    pub(super) fn render_text(&self, source: &str, ctx: Value) -> Result<String, RenderError> {
        bounded(&self.env.template_from_str(source)?, ctx)
    }
}
