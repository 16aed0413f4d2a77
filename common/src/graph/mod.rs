//! Task graphs: merging release, plugin and cluster graphs, resolving tasks onto nodes, ordering them.
