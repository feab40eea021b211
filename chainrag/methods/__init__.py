"""The methods: each one readable loop over the components a recipe gives it.

* :mod:`~chainrag.methods.paper`: ChainRAG (decompose, seeds, walk with sufficiency checks,
  rewrite, AnsInt / CxtInt) and its baselines NaiveRAG, NaiveRAG w/ QD and Iter-RetGen.
* :mod:`~chainrag.methods.longrag`: LongRAG (Zhao et al., 2024): hybrid retrieval of chunks, the
  CoT-guided filter, the extractor over their source paragraphs, the generator.
* :mod:`~chainrag.methods.seeds`: the seed papers' methods (002: LM-guided iteration and tree
  retrieval; 004: the four-module pipeline with its knowledge reservoir).
* :mod:`~chainrag.methods.ircot`: IRCoT as HippoRAG's code runs it, over any seed retriever
  (HippoRAG's, dense), with HippoRAG's QA reader.

Importing this package registers them in ``chainrag.recipes.registry.METHODS``.

Layer: may import the layers below (core, protocols, recipes, llm, components, index); never
runs, reports, training, experiments or the CLI.
"""

from chainrag.methods import ircot, longrag, paper, seeds

__all__ = ["ircot", "longrag", "paper", "seeds"]
