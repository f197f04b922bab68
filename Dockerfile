# Build a static nanokv and run it from an empty image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/nanokv ./cmd/nanokv

FROM scratch
COPY --from=build /out/nanokv /nanokv
EXPOSE 6379
VOLUME /data
ENTRYPOINT ["/nanokv", "--redis", "0.0.0.0:6379", "--data-dir", "/data"]
