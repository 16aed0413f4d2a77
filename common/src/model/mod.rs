//! The data model: releases, plugins, clusters, nodes, tasks and graphs.
