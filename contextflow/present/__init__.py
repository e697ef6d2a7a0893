"""The presenter layer: runs core functions for an operation and turns their results into a `Reply`
(text for people and models, and the same facts as JSON data). One module per feature."""
