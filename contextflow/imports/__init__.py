"""Moving in from other memory tools: `contextflow import PATH` and `contextflow export --to`.

One module per format reads its files into records (`model.py`): graph formats yield node and edge
records one at a time, kept on disk by `stage.py` and turned into `graph.*` events by `graphplan.py`;
contextflow's own export goes through `graph/transfer.py`. `detect.py` names the format from the
content; `run.py` drives a whole import.

The contract every format keeps:

- every event an import writes has an id derived from the format and the item's own key in the
  source (an entity's name, an issue's id, a note's permalink), never from where the file lies, so
  importing the same source again, here or on another machine of the same store, writes nothing;
  an item whose source changed is updated, and one deleted here stays deleted;
- a file is read through before anything of it is stored: a bad line is one error naming the file and
  the line, and nothing of that file is written (the other files of a folder still are); memory stays
  bounded whatever the size of the file;
- everything goes through `Store.append_many`, so secrets are redacted as for every write.
"""

from contextflow.features import Feature

FEATURE = Feature("imports", group="imports", table="contextflow.imports.operations")
