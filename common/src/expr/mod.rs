//! The expression language: YAQL, for computed task fields (`yaql_exp`) and graph node filters.
