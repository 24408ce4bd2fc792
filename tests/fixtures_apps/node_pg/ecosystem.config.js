module.exports = {
  apps: [{
    name: "catalog",
    script: "src/server.js",
    instances: 4,
    exec_mode: "cluster",
  }],
};
