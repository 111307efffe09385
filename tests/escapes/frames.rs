//! Frames: from a generator, coroutine or traceback to a frame, and from there up to the
//! worker's own frames (`f_back.f_locals['request']` holds the request's secrets). Frame and
//! code attributes are refused in the source before it runs (SyntaxError, so also at upload),
//! and at run time by every other path to an attribute.

use crate::support::refused;

#[test]
fn generator_frame_in_the_source() {
    refused(
        "g = (i for i in [1])\nx = g.gi_frame.f_back.f_locals['request']['env']",
        "SyntaxError",
        "\"gi_frame\" is an invalid attribute name",
    );
}

#[test]
fn generator_frame_through_getattr() {
    refused(
        "g = (i for i in [1])\nf = _getattr_(g, 'gi' + '_frame')",
        "AttributeError",
        "\"gi_frame\" is a restricted name",
    );
}

#[test]
fn generator_frame_through_from_import() {
    refused(
        "g = (i for i in [1])\nm = __import__('g', {'g': g}, None, ['gi_frame'])",
        "ImportError",
        "cannot import name 'gi_frame'",
    );
}

#[test]
fn generator_code_constants() {
    refused(
        "g = (i for i in [1])\nx = g.gi_code.co_consts",
        "SyntaxError",
        "\"gi_code\" is an invalid attribute name",
    );
}

#[test]
fn coroutine_frame() {
    refused(
        "async def c():\n    pass\nx = c().cr_frame.f_back",
        "SyntaxError",
        "\"cr_frame\" is an invalid attribute name",
    );
}

#[test]
fn async_generator_frame() {
    refused(
        "async def a():\n    yield 1\nx = a().ag_frame.f_back",
        "SyntaxError",
        "\"ag_frame\" is an invalid attribute name",
    );
}

#[test]
fn traceback_frame_of_an_exception() {
    refused(
        "try:\n    1 / 0\nexcept Exception as e:\n    x = e.__traceback__.tb_frame.f_back.f_locals",
        "SyntaxError",
        "\"__traceback__\" is an invalid attribute name",
    );
}

#[test]
fn traceback_through_getattr() {
    refused(
        "try:\n    1 / 0\nexcept Exception as e:\n    tb = _getattr_(e, '__traceback__')",
        "AttributeError",
        "\"__traceback__\" is an invalid attribute name because it starts with \"_\"",
    );
}

/// `tb_frame` spelled without a dunder before it: the frame attribute itself is refused.
#[test]
fn frame_attribute_of_any_object() {
    refused(
        "def f(tb):\n    return tb.tb_frame.f_globals\nx = f(None)",
        "SyntaxError",
        "\"tb_frame\" is an invalid attribute name",
    );
}
