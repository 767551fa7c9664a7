# A GPU runner: NGC PyTorch (which ships Transformer Engine) plus the tewatch suites.
# Build from the repository root:
#   docker build -f docker/runner.Dockerfile -t tewatch-runner .
# Run on a GPU host (results are uploaded to the service named by TEWATCH_URL):
#   docker run --rm --gpus all -e TEWATCH_URL=https://tewatch.example -e TEWATCH_TOKEN=... tewatch-runner
ARG NGC_PYTORCH_TAG=25.10-py3
FROM nvcr.io/nvidia/pytorch:${NGC_PYTORCH_TAG}

WORKDIR /tewatch
COPY . .
# torch and transformer_engine come from the image; only tewatch and asv are added.
RUN pip install --no-cache-dir --no-deps -e . \
 && pip install --no-cache-dir "asv==0.6.6" "asv_runner==0.3.2" nvidia-ml-py \
    typer rich httpx pydantic-settings

ENV TEWATCH_PROFILE=full
CMD ["bash", "-c", "tewatch run --profile \"$TEWATCH_PROFILE\" && tewatch upload .asv/results --url \"$TEWATCH_URL\" --token \"$TEWATCH_TOKEN\" ${TEWATCH_BRANCH:+--branch \"$TEWATCH_BRANCH\"}"]
