#!/usr/bin/env python3
"""Render site documents with Deckhand's own engine and print how long it takes.

The same documents `plinth-deckhand` renders (its benchmark `deckhand/benches/render.rs`): give the
treasuremap site's folder, or the file `cargo run -p plinth-deckhand --example generate_site -- FILE`
writes. Deckhand's `DocumentLayering` is run as its API runs it for a revision (no pre-validation), on a
fresh copy of the documents each time; reading the YAML is timed apart.

    python3 render_with_deckhand.py --deckhand-src DECKHAND_CHECKOUT [--repeat N] [--cleartext]
        [--api-redaction] [--digests FILE] [--redaction-digests FILE] PATH...

With `--api-redaction`, each rendering is followed, inside the time measured, by the redaction Deckhand's
API applies before it answers with rendered documents (`utils.redact_documents`: the data of encrypted
documents replaced by its SHA-256).

With `--digests`, it also writes one line per rendered document, `schema|layer|name sha256`, the digest
of its data as compact JSON with sorted keys: what `deckhand/tests/deckhand/conformance.rs` compares
`plinth-deckhand`'s rendering with. With `--redaction-digests`, one line per rendered document with what
Deckhand puts in place of its data when it redacts it (`DocumentDict.redact`): what the same test compares
`plinth-deckhand`'s redaction with.
"""

import argparse
import copy
import hashlib
import json
import os
import statistics
import sys
import time


def yaml_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith('.yaml'):
                        yield os.path.join(root, name)
        else:
            yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--deckhand-src', required=True,
                        help="a checkout of Deckhand's source (the folder holding the `deckhand` package)")
    parser.add_argument('--repeat', type=int, default=10, help='renderings to time (default 10)')
    parser.add_argument('--cleartext', action='store_true', help='render secrets in clear')
    parser.add_argument('--api-redaction', action='store_true',
                        help="redact as Deckhand's API does before answering, inside the time measured")
    parser.add_argument('--digests', help="write each rendered document's data digest to this file")
    parser.add_argument('--redaction-digests',
                        help="write what Deckhand's redaction puts in place of each rendered document's "
                             "data to this file")
    parser.add_argument('paths', nargs='+', help='YAML files or folders of them')
    args = parser.parse_args()

    sys.path.insert(0, args.deckhand_src)
    import yaml
    from deckhand.common import utils
    from deckhand.common.document import DocumentDict
    from deckhand.engine import layering

    started = time.perf_counter()
    documents = []
    for path in yaml_files(args.paths):
        with open(path) as f:
            documents.extend(d for d in yaml.safe_load_all(f) if d is not None)
    read = time.perf_counter() - started

    times = []
    count = 0
    for _ in range(args.repeat):
        docs = copy.deepcopy(documents)
        started = time.perf_counter()
        engine = layering.DocumentLayering(
            docs, validate=False, cleartext_secrets=args.cleartext)
        rendered = engine.render()
        if args.api_redaction:
            rendered = utils.redact_documents(rendered)
        times.append(time.perf_counter() - started)
        count = len(rendered)

    def key(doc):
        meta = doc.get('metadata') or {}
        layer = (meta.get('layeringDefinition') or {}).get('layer') or ''
        return '%s|%s|%s' % (doc.get('schema'), layer, meta.get('name'))

    def write_lines(path, digest):
        lines = ['%s %s' % (key(doc), digest(doc.get('data'))) for doc in rendered]
        with open(path, 'w') as f:
            f.write('\n'.join(sorted(lines)) + '\n')

    if args.digests:
        def sorted_digest(data):
            text = json.dumps(data, sort_keys=True, separators=(',', ':'), ensure_ascii=False)
            return hashlib.sha256(text.encode('utf-8')).hexdigest()
        write_lines(args.digests, sorted_digest)
    if args.redaction_digests:
        write_lines(args.redaction_digests, DocumentDict.redact)

    print('documents read: %d (%.1f ms)' % (len(documents), read * 1000))
    print('concrete documents rendered: %d' % count)
    print('render: min %.2f ms, median %.2f ms, max %.2f ms over %d runs' % (
        min(times) * 1000, statistics.median(times) * 1000,
        max(times) * 1000, len(times)))


if __name__ == '__main__':
    main()
