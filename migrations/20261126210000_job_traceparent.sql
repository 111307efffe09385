-- The trace a connector call continues (W3C traceparent of the step that scheduled it), so
-- the dispatcher's spans join the request's trace. NULL when traces are off.
ALTER TABLE jobs ADD COLUMN traceparent text;
