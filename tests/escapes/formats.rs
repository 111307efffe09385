//! Format strings: `str.format` looks attributes up itself, past the attribute guard
//! (`'{0.__class__}'.format(x)`); every way to reach it checks the fields first.

use crate::support::{refused, refused_with};
use serde_json::json;

const DUNDER: &str = "\"__class__\" is an invalid attribute name because it starts with \"_\"";

#[test]
fn format_method_of_a_literal() {
    refused(
        "x = '{0.__class__.__base__.__subclasses__}'.format(1)",
        "AttributeError",
        DUNDER,
    );
}

#[test]
fn format_map() {
    refused(
        "x = '{a.__class__}'.format_map({'a': 1})",
        "AttributeError",
        DUNDER,
    );
}

#[test]
fn unbound_format_of_the_str_class() {
    refused(
        "x = str.format('{0.__globals__}', json.loads)",
        "AttributeError",
        "\"__globals__\" is an invalid attribute name",
    );
}

#[test]
fn format_through_getattr() {
    refused(
        "f = _getattr_(str, 'format')\nx = f('{0.__class__}', 1)",
        "NotImplementedError",
        "Using the format*() methods of `str` is not safe",
    );
}

#[test]
fn field_in_a_nested_format_spec() {
    refused(
        "x = '{0:{1.__class__}}'.format(1, 2)",
        "AttributeError",
        DUNDER,
    );
}

/// A str subclass a module view hands out (dateparser's `PartOfDay` is a str enum).
#[test]
fn format_of_a_str_subclass_from_a_view() {
    refused(
        "x = dateparser.PartOfDay.format('{0.__globals__}', json.loads)",
        "AttributeError",
        "\"__globals__\" is an invalid attribute name",
    );
}

#[test]
fn frame_field_of_a_generator() {
    refused(
        "x = '{0.gi_frame.f_back}'.format((i for i in [1]))",
        "AttributeError",
        "\"gi_frame\" is an invalid attribute name because it gives access to running code",
    );
}

/// The format string comes from the task data: nothing in the source to refuse.
#[test]
fn format_string_from_task_data() {
    refused_with(
        "x = template.format(json.loads)",
        json!({"template": "{0.__globals__[__builtins__]}"}),
        "AttributeError",
        "\"__globals__\" is an invalid attribute name",
    );
}

#[test]
fn f_string_field() {
    refused(
        "x = f'{json.loads.__globals__}'",
        "SyntaxError",
        "\"__globals__\" is an invalid attribute name",
    );
}
