const API_BASE = "http://old.example.com/api";
const CDN = "https://cdn.example.org";
export { API_BASE, CDN };
