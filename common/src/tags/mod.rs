//! Node tags: role expansion, primary election and matching tasks to nodes.
